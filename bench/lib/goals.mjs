// The goals of issue 19 ("Performance, second pass"), held against what a run of `npm run bench` measured: each
// goal row with the figure this run measured, or "not measured in this run" and the scenario that measures it.
// run.mjs prints them last, as a markdown table.
import { fmt, leanShare } from './report.mjs';

/** The least share of the lean reference (bench/lib/lean.mjs) Waybill is to reach, in server CPU per request. */
const LEAN_SHARE = 0.85;
/** Read scenarios with a lean goal, and how the goal names them. */
const LEAN_GOALS = [
  ['dlr', '`/dlr`'],
  ['mode1', 'mode 1 (`messageIds`, 20 ids)'],
  ['history', 'history page 1 (size 100)'],
  ['receipts-feed', '`/receipts` page (100 events)'],
];
const INGEST_GOALS = { SQLite: 50_000, PostgreSQL: 20_000 };
const CALLBACK_GOALS = [
  { engine: 'SQLite', instances: 1, perSecond: 5_000, by: '`npm run bench -- callbacks`' },
  {
    engine: 'PostgreSQL',
    instances: 2,
    perSecond: 3_000,
    by: '`node bench/callbacks.mjs --instances 2 --database-url postgres://…`',
  },
];
const DISK_GOAL = 400;

const NOT_MEASURED = 'not measured in this run';
const verdict = (met) => (met ? 'met' : '**missed**');

/**
 * The goal rows as { goal, target, measured, verdict, by }. `rows` are the run's result rows, `engine` the
 * dataset's ('SQLite' or 'PostgreSQL'), `datasetBytes` its size on disk (null when unknown).
 */
export function goalRows({ rows, engine, recipients, datasetBytes }) {
  const of = (scenario) => rows.find((r) => r.scenario === scenario);
  const goals = [];

  for (const [scenario, name] of LEAN_GOALS) {
    const r = of(scenario);
    const goal = {
      goal: `${name}, Waybill's share of the lean reference`,
      target: `≥ ${LEAN_SHARE}× by CPU`,
    };
    const by = `\`npm run bench -- ${scenario}\` on SQLite`;
    if (!r?.lean) {
      goals.push({ ...goal, measured: NOT_MEASURED, verdict: '', by });
      continue;
    }
    goals.push({
      ...goal,
      measured: `${fmt(r.waybill.cpuUsPerRequest)} µs/req, ${leanShare(r)}`,
      verdict: verdict(r.leanCpuRatio >= LEAN_SHARE),
      by,
    });
  }

  for (const [ingestEngine, perSecond] of Object.entries(INGEST_GOALS)) {
    const goal = { goal: `ingest via the API, ${ingestEngine}`, target: `≥ ${fmt(perSecond)} records/s` };
    const by = `\`npm run bench -- ingest${ingestEngine === 'PostgreSQL' ? ' --database-url postgres://…' : ''}\``;
    const kinds = ['messages', 'receipts'].map((kind) => [kind, of(`ingest-${kind}`)?.ingest]);
    // Beside each, on SQLite, what the lean store-only reference wrote the same records at.
    const leanOf = (kind) => of(`ingest-${kind}`)?.lean;
    const beside = (kind) =>
      leanOf(kind) ? ` (lean store-only reference ${fmt(leanOf(kind).recordsPerSecond)}/s)` : '';
    if (engine !== ingestEngine || kinds.some(([, k]) => !k)) {
      goals.push({ ...goal, measured: NOT_MEASURED, verdict: '', by });
      continue;
    }
    goals.push({
      ...goal,
      measured: kinds.map(([kind, k]) => `${kind} ${fmt(k.recordsPerSecond)}/s${beside(kind)}`).join(', '),
      verdict: verdict(kinds.every(([, k]) => k.recordsPerSecond >= perSecond)),
      by,
    });
  }

  // The callbacks scenario runs one instance, on the dataset's PostgreSQL database or on a SQLite file of its own.
  const callbacks = of('callbacks')?.callbacks;
  const callbacksEngine = callbacks?.databaseUrl.startsWith('postgres') ? 'PostgreSQL' : 'SQLite';
  for (const g of CALLBACK_GOALS) {
    const goal = {
      goal: `callback deliveries, ${g.engine}${g.instances > 1 ? `, ${g.instances} instances` : ''}`,
      target: `≥ ${fmt(g.perSecond)}/s`,
    };
    if (!callbacks || callbacksEngine !== g.engine || callbacks.instances < g.instances) {
      goals.push({ ...goal, measured: NOT_MEASURED, verdict: '', by: g.by });
      continue;
    }
    goals.push({
      ...goal,
      measured: `${fmt(callbacks.deliveriesPerS)} deliveries/s`,
      verdict: verdict(callbacks.deliveriesPerS >= g.perSecond),
      by: g.by,
    });
  }

  const disk = { goal: `disk per recipient, ${engine}`, target: `≤ ${DISK_GOAL} bytes`, by: 'every run' };
  if (datasetBytes === null) {
    goals.push({ ...disk, measured: NOT_MEASURED, verdict: '', by: 'a dataset whose manifest has its size' });
  } else {
    const perRecipient = datasetBytes / recipients;
    goals.push({
      ...disk,
      measured: `${fmt(perRecipient)} bytes (the dataset's ${fmt(datasetBytes / 2 ** 20)} MiB ÷ ${fmt(recipients)} recipients)`,
      verdict: verdict(perRecipient <= DISK_GOAL),
    });
  }
  return goals;
}
