#!/usr/bin/env node
// Fallback for bench/run.mjs --server app: the service without the CLI (buildApp + listen), configured from
// the same environment variables as `waybill serve --port 0 --no-demo`.
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const dist = resolve(dirname(fileURLToPath(import.meta.url)), '../packages/server/dist');
const { buildApp } = await import(`${dist}/app.js`);
const { loadConfig } = await import(`${dist}/config.js`);
const { resolvePepper } = await import(`${dist}/auth/pepper.js`);
const { openStore } = await import(`${dist}/store/open.js`);

const config = loadConfig({ PORT: '0', ...process.env });
const store = openStore(config);
await store.migrate();
const app = await buildApp({ config, store, pepper: resolvePepper(config).value });
const stop = async () => {
  await app.close();
  await store.close();
  process.exit(0);
};
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
await app.listen({ host: config.host, port: config.port });
