#!/usr/bin/env node
// The console's pages over HTTP on a bench dataset (issue 16: "your note gives the page timings"): signs in as
// the dataset's account through the sign-in form (CSRF token, Origin), then asks each page one request at a
// time and prints p50/p99 of the whole answer (server and HTML). One client, no concurrency: what a person
// waits for, not a throughput.
//
//   node bench/console-pages.mjs --database-url sqlite:bench/.data/datagen-10m.db [--n 50]
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { manifestPathFor } from './lib/paths.mjs';
import { startWaybill } from './lib/processes.mjs';

const { values } = parseArgs({
  options: {
    'database-url': { type: 'string' },
    n: { type: 'string', default: '50' },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  console.log(`usage: node bench/console-pages.mjs --database-url <a bench dataset> [--n 50]

Signs in to the console as the dataset's account and times each page (review, lookup, contact history,
deliveries, settings), one request at a time: p50 and p99 of the whole answer. Build first (npm run build).`);
  process.exit(0);
}
const databaseUrl = values['database-url'];
if (databaseUrl === undefined)
  throw new Error('--database-url is required (a bench dataset: bench/datagen.mjs)');
const n = Number(values.n);
const manifest = JSON.parse(readFileSync(manifestPathFor(databaseUrl), 'utf8'));

const server = await startWaybill({ databaseUrl, pepper: manifest.pepper, label: 'waybill' });
const base = server.url;
try {
  // Sign in as a browser does: the form's cookie and token, then the POST with a same-origin Origin.
  const form = await fetch(`${base}/console/sign-in`);
  const signInCookie = form.headers.getSetCookie().map((c) => c.split(';')[0]);
  const csrf = /name="_csrf" value="([^"]+)"/.exec(await form.text())?.[1];
  if (csrf === undefined) throw new Error('no CSRF token on the sign-in page');
  const signedIn = await fetch(`${base}/console/sign-in`, {
    method: 'POST',
    redirect: 'manual',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      origin: base,
      cookie: signInCookie.join('; '),
    },
    body: new URLSearchParams({ _csrf: csrf, key: manifest.key, secret: manifest.secret }).toString(),
  });
  const session = signedIn.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .find((c) => c.startsWith('waybill_session='));
  if (signedIn.status !== 303 || session === undefined)
    throw new Error(`sign-in answered ${signedIn.status}`);

  // An SMS message id of the dataset's campaign, for the lookup page (it shows /dlr items: SMS only).
  const campaign = await fetch(
    `${base}/messages?key=${manifest.key}&secret=${manifest.secret}` +
      `&campaignId=${encodeURIComponent(manifest.campaign.id)}&channel=SMS&size=1`,
  ).then((r) => r.json());
  const messageId = campaign.messages?.[0]?.id;
  if (messageId === undefined) throw new Error('the campaign has no SMS message');

  const pages = {
    review: '/console/review',
    'review (campaign)': `/console/review?campaign=${encodeURIComponent(manifest.campaign.id)}`,
    lookup: `/console/messages?id=${encodeURIComponent(messageId)}`,
    'contact history': `/console/contacts?channel=${manifest.long.channel}&channelUserId=${manifest.long.channelUserId}`,
    deliveries: '/console/deliveries',
    settings: '/console/settings',
  };
  console.log(
    `# console pages on ${manifest.recipients.toLocaleString('en')} recipients, ${n} requests each`,
  );
  console.log('| page | p50 ms | p99 ms | bytes |\n|---|---:|---:|---:|');
  for (const [name, path] of Object.entries(pages)) {
    const times = [];
    let bytes = 0;
    for (let i = 0; i < n + 3; i++) {
      const started = performance.now();
      const answer = await fetch(`${base}${path}`, { headers: { cookie: session } });
      const body = await answer.text();
      if (answer.status !== 200) throw new Error(`${path} answered ${answer.status}: ${body.slice(0, 200)}`);
      if (i >= 3) times.push(performance.now() - started); // three warm-up requests
      bytes = body.length;
    }
    times.sort((a, b) => a - b);
    const at = (q) => times[Math.min(times.length - 1, Math.floor(q * times.length))].toFixed(1);
    console.log(`| ${name} | ${at(0.5)} | ${at(0.99)} | ${bytes.toLocaleString('en')} |`);
  }
} finally {
  await server.stop();
}
