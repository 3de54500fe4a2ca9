/**
 * The oldest Node.js the service runs on: the `engines` field of package.json (root and @waybill/server), which
 * `.npmrc` (`engine-strict=true`) enforces at install and `main.ts` at start. A test keeps the three in step.
 *
 * This module imports nothing: the CLI entry loads it before anything else, on whatever Node runs it.
 */
export const MIN_NODE = '22.12.0';

/** `[major, minor, patch]` of a version string such as `22.12.0` or `v20.20.2`. */
const parts = (version: string): number[] =>
  version
    .replace(/^v/, '')
    .split('.')
    .map((part) => Number.parseInt(part, 10) || 0);

/** True when `version` is at least {@link MIN_NODE}. */
export function isSupportedNode(version: string): boolean {
  const have = parts(version);
  const need = parts(MIN_NODE);
  for (let i = 0; i < need.length; i++) {
    const a = have[i] ?? 0;
    const b = need[i] ?? 0;
    if (a !== b) return a > b;
  }
  return true;
}

/**
 * The one sentence that refuses an unsupported Node.js, or undefined when this one will do. Older ones crash as
 * better-sqlite3 loads (a bare "Segmentation fault"), so the CLI says why instead.
 */
export function unsupportedNodeMessage(version: string, execPath: string): string | undefined {
  if (isSupportedNode(version)) return undefined;
  const [major, minor] = MIN_NODE.split('.');
  return (
    `waybill needs Node.js ${major}.${minor} or newer, but ${execPath} is Node.js ${version.replace(/^v/, '')}: ` +
    'switch to a newer Node.js (see README.md) and run `npm install` again.'
  );
}
