import { setImmediate as nextTurn } from 'node:timers/promises';
import { expect, it } from 'vitest';
import { GroupCommit } from '../../src/http/intake-groups.js';

/** The HTTP adapters' group commit (http/intake-groups.ts), with a commit that records what it was given. */
const recording = (work: (items: number[]) => Promise<string[]> = async (items) => items.map(String)) => {
  const calls: { key: string; items: number[] }[] = [];
  const groups = new GroupCommit<number, string>(async (key, items) => {
    calls.push({ key, items });
    return work(items);
  });
  return { calls, groups };
};

it('commits what is added in one turn together, per key, and answers each item with its own result', async () => {
  const { calls, groups } = recording();
  const answers = await Promise.all([
    ...Array.from({ length: 30 }, (_, i) => groups.add('a', i)),
    groups.add('b', 100),
  ]);
  expect(answers).toStrictEqual([...Array.from({ length: 30 }, (_, i) => String(i)), '100']);
  expect(calls).toStrictEqual([
    { key: 'a', items: Array.from({ length: 30 }, (_, i) => i) },
    { key: 'b', items: [100] },
  ]);
});

it('what arrives while a commit runs goes into the next one; at most 500 in one', async () => {
  let release: () => void = () => {};
  const { calls, groups } = recording(async (items) => {
    if (calls.length === 1) await new Promise<void>((r) => (release = r));
    return items.map(String);
  });
  const first = groups.add('a', 0);
  await nextTurn();
  expect(calls).toHaveLength(1);
  const later = Array.from({ length: 501 }, (_, i) => groups.add('a', i + 1));
  await nextTurn();
  expect(calls).toHaveLength(1);
  release();
  expect(await first).toBe('0');
  expect(await Promise.all(later)).toHaveLength(501);
  expect(calls.map((c) => c.items.length)).toStrictEqual([1, 500, 1]);
});

it('a commit that throws refuses every item of its group, and the key commits again afterwards', async () => {
  let fail = true;
  const { groups } = recording(async (items) => {
    if (fail) throw new Error('the database is unavailable');
    return items.map(String);
  });
  const refused = await Promise.allSettled([groups.add('a', 1), groups.add('a', 2)]);
  expect(refused.map((r) => r.status)).toStrictEqual(['rejected', 'rejected']);
  fail = false;
  expect(await groups.add('a', 3)).toBe('3');
});

it('a commit that answers too few results refuses the items left without one', async () => {
  const { groups } = recording(async () => ['only one']);
  const settled = await Promise.allSettled([groups.add('a', 1), groups.add('a', 2)]);
  expect(settled.map((r) => r.status)).toStrictEqual(['fulfilled', 'rejected']);
});
