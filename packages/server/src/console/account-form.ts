import { Compile } from 'typebox/compile';
import { ApiError } from '../domain/errors.js';
import type { AccountPatch } from '../domain/records.js';
import { checkSettable, PatchBody } from '../http/accounts.js';
import { field } from './render.js';

/** The operator API's own body schema, compiled once: a form is held to the same rules as a PATCH. */
const patchShape = Compile(PatchBody);

/** Which account fields a form carries: checkboxes are absent when unticked, so a form must say it has them. */
export type FormFields = readonly (keyof AccountPatch)[];

/**
 * The account fields of a submitted form as the API's patch: the same schema and the same checks
 * (http/accounts.ts checkSettable: whitelist entries, the callback URL normalized). A whitelist is one entry
 * per line (or comma); an empty callback URL clears it. Refusals are 400s naming the field.
 */
export function patchFromForm(body: unknown, fields: FormFields): AccountPatch {
  const patch: Record<string, unknown> = {};
  for (const name of fields) {
    const value = field(body, name);
    switch (name) {
      case 'dlrQueryEnabled':
      case 'callbackEnabled':
        patch[name] = value !== undefined;
        break;
      case 'balance':
      case 'creditLimit':
        patch[name] = value === undefined ? Number.NaN : Number(value);
        break;
      case 'ipWhitelist':
        patch[name] = (value ?? '')
          .split(/[\s,]+/)
          .map((entry) => entry.trim())
          .filter((entry) => entry !== '');
        break;
      case 'callbackUrl':
        patch[name] = value ?? null;
        break;
      case 'name':
        patch[name] = value ?? '';
        break;
    }
  }
  if (!patchShape.Check(patch)) {
    const [first] = patchShape.Errors(patch);
    const where = first?.instancePath.replace(/^\//, '').split('/')[0] ?? 'the form';
    throw new ApiError('invalid_request', `${where}: ${first?.message ?? 'not accepted'}`);
  }
  return checkSettable(patch as AccountPatch);
}
