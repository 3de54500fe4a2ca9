#!/usr/bin/env node
// The `waybill` command as npm links it (node_modules/.bin/waybill, and `npx waybill`). This file is committed,
// so the link exists from `npm install` on: npm links a package's bins as it installs, before anything is
// built, and a bin inside dist/ would not be there to link on a fresh clone. It runs the built CLI, which
// `npm install` builds (the root `prepare` script) and `npm run build` rebuilds.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const main = new URL('../dist/cli/main.js', import.meta.url);
if (existsSync(main)) {
  await import(main.href);
} else {
  process.stderr.write(
    `waybill is not built: ${fileURLToPath(main)} is missing; run \`npm run build\` in the repository first.\n`,
  );
  process.exitCode = 1;
}
