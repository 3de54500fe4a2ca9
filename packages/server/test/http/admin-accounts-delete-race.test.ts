import { describe, expect, it } from 'vitest';
import { engines } from '../support/engines.js';
import { START, useHarness } from '../support/http.js';
import { expectProblem } from '../support/problems.js';

const at = (seconds: number) => new Date(START + seconds * 1000).toISOString();

/**
 * Deleting an account while the operator API ingests into it. A batch looks its account up, then writes:
 * one whose account is deleted in between must answer 404 like any unknown account, never 500.
 */
describe.each(engines())('$name operator API: deleting an account during ingest', (engine) => {
  const h = useHarness(engine);

  it('answers every racing batch 200 or 404 and leaves nothing of the account', {
    timeout: 30_000,
  }, async () => {
    const account = await h().createAccount({ callbackUrl: 'https://hooks.example.com/dlr' });
    const seeded = await h().ingest(account.id, [
      { id: 'seed', channel: 'SMS', channelUserId: '447700900001', createdAt: at(0), text: 'hi' },
    ]);
    expect(seeded.statusCode, seeded.body).toBe(200);

    const racers: Promise<{ kind: string; res: Awaited<ReturnType<ReturnType<typeof h>['inject']>> }>[] = [];
    for (let n = 0; n < 24; n++) {
      const message = {
        id: `m-${n}`,
        channel: 'SMS',
        channelUserId: '447700900001',
        createdAt: at(n),
        text: 'x',
      };
      racers.push(
        h()
          .ingest(account.id, [message])
          .then((res) => ({ kind: 'messages', res })),
      );
      if (n % 4 === 3) {
        const receipt = { messageId: `m-${n}`, drStatuscode: 'delivered' };
        racers.push(
          h()
            .receipts(account.id, [receipt])
            .then((res) => ({ kind: 'receipts', res })),
        );
      }
      if (n === 8) {
        racers.push(
          h()
            .admin('DELETE', `/admin/v1/accounts/${account.id}`)
            .then((res) => ({ kind: 'delete', res })),
        );
      }
    }
    const done = await Promise.all(racers);

    const deleted = done.find((d) => d.kind === 'delete');
    expect(deleted?.res.statusCode, deleted?.res.body).toBe(204);
    const batches = done.filter((d) => d.kind !== 'delete');
    for (const { res } of batches) {
      if (res.statusCode === 404) expectProblem(res, 404, 'not_found');
      else expect(res.statusCode, res.body).toBe(200);
    }
    // Some batches came after the delete: the race was run, not dodged.
    expect(batches.some((b) => b.res.statusCode === 404)).toBe(true);
    expect(h().logs.join('')).not.toContain('unexpected failure');

    expectProblem(await h().admin('GET', `/admin/v1/accounts/${account.id}`), 404, 'not_found');
    expect(await h().store.findDlr(account.id, 'seed')).toStrictEqual([]);
    expect(await h().store.findDlr(account.id, 'm-23')).toStrictEqual([]);
    expect((await h().store.outboxStats()).parked).toBe(0);
  });
});
