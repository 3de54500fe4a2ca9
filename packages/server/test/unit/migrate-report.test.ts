import { describe, expect, it } from 'vitest';
import { MIGRATIONS } from '../../src/store/sqlite/migrations.js';
import { openSqliteStore } from '../../src/store/sqlite/store.js';

describe('SQLite migrate() reports what it applied', () => {
  it('reports the migrations applied as the store opened on its first call, and none after', async () => {
    const store = openSqliteStore({ path: ':memory:', cacheMb: 16 });
    try {
      expect(await store.migrate()).toEqual(MIGRATIONS.map(({ version, name }) => ({ version, name })));
      expect(await store.migrate()).toEqual([]);
    } finally {
      await store.close();
    }
  });
});
