import { readFile } from 'node:fs/promises';
import { UsageError } from './options.js';

/**
 * The items of a `waybill ingest` input: a JSON array of items, the API's own body (`{"messages": [...]}` or
 * `{"receipts": [...]}`), or NDJSON (one item a line). Each item keeps the line it came from, so that an error
 * can name it.
 */

export type IngestKind = 'messages' | 'receipts';

export interface InputItem {
  value: unknown;
  /** The 1-based line of an NDJSON item; undefined for JSON input. */
  line: number | undefined;
}

/** Reads a file, or stdin for `-`. */
export async function readInput(source: string): Promise<string> {
  if (source === '-') {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  }
  try {
    return await readFile(source, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why =
      code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'a directory' : (err as Error).message;
    throw new UsageError(`cannot read ${source}: ${why}`);
  }
}

/** The items of the input text; throws a UsageError naming the line when it is neither JSON nor NDJSON. */
export function parseInput(text: string, kind: IngestKind): InputItem[] {
  const body = text.replace(/^\uFEFF/, '');
  if (body.trim() === '') throw new UsageError('the input holds no items');
  let whole: unknown;
  let isWhole = true;
  try {
    whole = JSON.parse(body);
  } catch {
    isWhole = false;
  }
  if (isWhole) {
    if (Array.isArray(whole)) return whole.map((value) => ({ value, line: undefined }));
    if (typeof whole === 'object' && whole !== null) {
      const other: IngestKind = kind === 'messages' ? 'receipts' : 'messages';
      const keys = Object.keys(whole);
      if (keys.length === 1 && keys[0] === kind) {
        const list = (whole as Record<string, unknown>)[kind];
        if (!Array.isArray(list)) throw new UsageError(`"${kind}" must be an array of items`);
        return list.map((value) => ({ value, line: undefined }));
      }
      if (keys.length === 1 && keys[0] === other) {
        throw new UsageError(`the input holds ${other}, not ${kind}: use \`waybill ingest ${other}\``);
      }
      // One object on one line is NDJSON of one item.
      return [{ value: whole, line: 1 }];
    }
    throw new UsageError(`the input must be a JSON array of ${kind}, {"${kind}": [...]} or NDJSON`);
  }
  const items: InputItem[] = [];
  const lines = body.split(/\r?\n/);
  for (const [i, raw] of lines.entries()) {
    if (raw.trim() === '') continue;
    try {
      items.push({ value: JSON.parse(raw), line: i + 1 });
    } catch (err) {
      throw new UsageError(
        `line ${i + 1} is not JSON (${(err as Error).message}); the input must be a JSON array of ${kind}, {"${kind}": [...]} or NDJSON, one item a line`,
      );
    }
  }
  return items;
}
