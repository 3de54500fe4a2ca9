import { fileURLToPath } from 'node:url';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../context.js';
import { PROBLEMS, type ProblemCode } from '../domain/errors.js';
import type { ConsoleSessions } from './session.js';

/**
 * Templates and assets are read from src/console at run time, from `src` and from `dist` alike (both sit two
 * levels below the package); package.json's `files` ships them with the package.
 */
const PACKAGE_ROOT = new URL('../../', import.meta.url);
export const VIEWS_DIR = fileURLToPath(new URL('src/console/views/', PACKAGE_ROOT));
export const ASSETS_DIR = fileURLToPath(new URL('src/console/assets/', PACKAGE_ROOT));

/** What every page group of the console is handed. */
export interface ConsoleDeps {
  ctx: AppContext;
  sessions: ConsoleSessions;
}

/** Renders a page inside the layout, with what the layout needs: who is signed in and the CSRF token. */
export function page(
  request: FastifyRequest,
  reply: FastifyReply,
  template: string,
  data: Record<string, unknown> & { title: string },
  status = 200,
): FastifyReply {
  const signed = request.signed;
  const account = data.account as { id: string } | undefined;
  // The operator names the account a page shows in its links and forms; an account's own session never does.
  const accountParam =
    signed?.kind === 'operator' && account ? `account=${encodeURIComponent(account.id)}` : '';
  return reply
    .code(status)
    .type('text/html; charset=utf-8')
    .view(template, {
      ...data,
      signed,
      csrf: signed?.csrf ?? '',
      path: request.url.split('?')[0] ?? '',
      accountParam,
      time: formatTime,
    });
}

/** Times as people read them here: UTC, to the second, without the ISO letters. */
export function formatTime(value: Date | string | null | undefined): string {
  if (value === null || value === undefined) return '—';
  const date = typeof value === 'string' ? new Date(value) : value;
  return Number.isNaN(date.getTime())
    ? String(value)
    : `${date.toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

/** A query or form value of one string (the first when repeated), trimmed; undefined when absent or empty. */
export function field(source: unknown, name: string): string | undefined {
  const value = (source as Record<string, unknown> | undefined)?.[name];
  const first = Array.isArray(value) ? value[0] : value;
  if (typeof first !== 'string') return undefined;
  const trimmed = first.trim();
  return trimmed === '' ? undefined : trimmed;
}

/** The status and the words a person sees for an error the API would answer with this problem. */
export function errorPage(code: ProblemCode, detail: string) {
  return { status: PROBLEMS[code].status as number, title: PROBLEMS[code].title as string, detail };
}
