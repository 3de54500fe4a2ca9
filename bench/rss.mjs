// Resident memory of `waybill serve` on a seeded database, idle and after 30 s of /dlr and history load.
//
//   node bench/rss.mjs sqlite:bench/.data/waybill-1m.db bench/.data/waybill-1m.db.manifest.json
//
// The first argument is the DATABASE_URL, the second the manifest bench/seed.mjs wrote for it.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import autocannon from 'autocannon';

const [url, manifestPath] = process.argv.slice(2);
const m = JSON.parse(readFileSync(manifestPath, 'utf8'));
const child = spawn(
  process.execPath,
  ['packages/server/dist/cli/main.js', 'serve', '--port', '0', '--no-demo'],
  {
    env: {
      ...process.env,
      DATABASE_URL: url,
      WAYBILL_PEPPER: m.pepper,
      WAYBILL_RATE_PER_SECOND: '0',
      WAYBILL_ACCESS_LOG: 'off',
    },
  },
);
let out = '';
const base = await new Promise((ok) =>
  child.stdout.on('data', (d) => {
    out += d;
    const x = /listening at (http:\/\/[^\s"]+)/.exec(out);
    if (x) ok(x[1]);
  }),
);
const rss = () =>
  Object.fromEntries(
    readFileSync(`/proc/${child.pid}/status`, 'utf8')
      .split('\n')
      .filter((l) => /^Vm(RSS|HWM)/.test(l))
      .map((l) => l.split(/:\s+/)),
  );
console.log('idle', rss());
const auth = `Basic ${Buffer.from(`${m.key}:${m.secret}`).toString('base64')}`;
let i = 0;
await autocannon({
  url: base,
  connections: 16,
  duration: 15,
  requests: [
    {
      setupRequest: (r) => ({
        ...r,
        path: `/dlr?key=${m.key}&secret=${m.secret}&messageid=${m.sampleMessageIds[i++ % m.sampleMessageIds.length]}`,
      }),
    },
  ],
});
const convs = m.sampleConversations;
await autocannon({
  url: base,
  connections: 16,
  duration: 15,
  headers: { authorization: auth },
  requests: [
    {
      setupRequest: (r) => {
        const c = convs[i++ % convs.length];
        return {
          ...r,
          path: `/messages?channel=${c.channel}&channelUserId=${encodeURIComponent(c.channelUserId)}&size=20`,
        };
      },
    },
  ],
});
console.log('after 30 s of /dlr + history load', rss());
child.kill('SIGTERM');
