#!/usr/bin/env node
/**
 * The `waybill` command. This file checks the Node.js version before anything else loads: static imports are
 * hoisted (evaluated before any line of the importing module), and on an unsupported Node the native SQLite
 * module they pull in crashes the process with a bare "Segmentation fault". So it imports nothing but the
 * check, and loads the CLI itself (run.ts) with a dynamic import once the check has passed.
 */
import { unsupportedNodeMessage } from './node-version.js';

const refusal = unsupportedNodeMessage(process.versions.node, process.execPath);
if (refusal !== undefined) {
  process.stderr.write(`${refusal}\n`);
  process.exitCode = 1;
} else {
  // Not a top-level await: `serve` never resolves, and an unsettled top-level await ends the process.
  import('./run.js')
    .then(({ runCli }) => runCli(process.argv.slice(2)))
    .then(
      (code) => {
        process.exitCode = code;
      },
      (error: unknown) => {
        process.stderr.write(`${String(error)}\n`);
        process.exitCode = 1;
      },
    );
}
