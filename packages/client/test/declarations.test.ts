/**
 * The built declarations compile in a consumer project with an old `lib` (ES2018 and the DOM; ES2020 with
 * @types/node and no DOM), with lib checks on: consumer-lib/ holds the project, this runs tsc on it. Skips
 * itself until the SDK is built (`tsc -b`), like the examples test.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const CLIENT = fileURLToPath(new URL('..', import.meta.url));
const PROJECT = join(CLIENT, 'test/consumer-lib');
const BUILT = existsSync(join(CLIENT, 'dist/index.d.ts'));
const TSC = join(dirname(createRequire(import.meta.url).resolve('typescript/package.json')), 'bin/tsc');

function tsc(config: string): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [TSC, '-p', join(PROJECT, config)], (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof err.code === 'number' ? err.code : 1;
      resolve({ code, output: `${stdout}${stderr}` });
    });
  });
}

describe.skipIf(!BUILT)('the built declarations', () => {
  it('compile for a consumer on lib ES2018 + DOM, without skipLibCheck', async () => {
    const { code, output } = await tsc('tsconfig.json');
    expect(output).toBe('');
    expect(code).toBe(0);
  });

  it('compile for a Node consumer on lib ES2020 + @types/node, without the DOM', async () => {
    const { code, output } = await tsc('tsconfig.node.json');
    expect(output).toBe('');
    expect(code).toBe(0);
  });
});
