import { describe, expect, it } from 'vitest';
import type { IntakeRouteRecord } from '../../src/domain/intake/route.js';
import { DuplicateKeyError } from '../../src/store/store.js';
import { engines } from '../support/engines.js';
import { NOW, useStore } from './fixtures.js';

const route = (overrides: Partial<IntakeRouteRecord> = {}): IntakeRouteRecord => ({
  name: 'kannel-eu',
  kind: 'kannel',
  accounts: [],
  timezone: 'UTC',
  errorMap: {},
  enabled: true,
  createdAt: NOW,
  smpp: null,
  sealedPassword: null,
  sealedToken: 'sealed:v1:token',
  tokenDigest: Buffer.alloc(32, 1),
  ...overrides,
});

describe.each(engines())('$name store: intake routes', (engine) => {
  const store = useStore(engine);

  it('stores a route as given and finds it by name and by token digest', async () => {
    const smpp = route({
      name: 'smsc-1',
      kind: 'smpp',
      accounts: ['0190c0de-0000-7000-8000-000000000001'],
      timezone: 'Europe/Berlin',
      errorMap: { '027': '2', ESME_RTHROTTLED: '6' },
      enabled: false,
      smpp: {
        host: 'smsc.example',
        port: 2775,
        systemId: 'wb',
        systemType: null,
        bindType: 'transceiver',
        tls: false,
        enquireLinkSeconds: 30,
      },
      sealedPassword: 'sealed:v1:pw',
      sealedToken: null,
      tokenDigest: null,
    });
    await store().insertIntakeRoute(smpp);
    await store().insertIntakeRoute(route());
    expect(await store().getIntakeRoute('smsc-1')).toStrictEqual(smpp);
    expect((await store().listIntakeRoutes()).map((r) => r.name)).toStrictEqual(['kannel-eu', 'smsc-1']);
    expect(await store().intakeRouteByTokenDigest(Buffer.alloc(32, 1))).toStrictEqual(route());
    expect(await store().intakeRouteByTokenDigest(Buffer.alloc(32, 2))).toBeNull();
    expect(await store().getIntakeRoute('nope')).toBeNull();
  });

  it('refuses a taken name', async () => {
    await store().insertIntakeRoute(route());
    await expect(
      store().insertIntakeRoute(route({ tokenDigest: Buffer.alloc(32, 3) })),
    ).rejects.toBeInstanceOf(DuplicateKeyError);
  });

  it('updates the settings without touching the token, and the token alone', async () => {
    await store().insertIntakeRoute(route());
    const changed = route({ timezone: 'Asia/Tokyo', enabled: false, tokenDigest: Buffer.alloc(32, 9) });
    expect(await store().updateIntakeRoute(changed)).toBe(true);
    expect(await store().getIntakeRoute('kannel-eu')).toStrictEqual({
      ...changed,
      tokenDigest: Buffer.alloc(32, 1),
    });
    expect(await store().setIntakeRouteToken('kannel-eu', 'sealed:v1:new', Buffer.alloc(32, 5))).toBe(true);
    expect(await store().intakeRouteByTokenDigest(Buffer.alloc(32, 1))).toBeNull();
    expect(await store().intakeRouteByTokenDigest(Buffer.alloc(32, 5))).toMatchObject({
      name: 'kannel-eu',
      timezone: 'Asia/Tokyo',
      sealedToken: 'sealed:v1:new',
    });
    expect(await store().updateIntakeRoute(route({ name: 'nope' }))).toBe(false);
    expect(await store().setIntakeRouteToken('nope', 'sealed:v1:x', Buffer.alloc(32, 6))).toBe(false);
  });

  it('deletes a route', async () => {
    await store().insertIntakeRoute(route());
    expect(await store().deleteIntakeRoute('kannel-eu')).toBe(true);
    expect(await store().deleteIntakeRoute('kannel-eu')).toBe(false);
    expect(await store().intakeRouteByTokenDigest(Buffer.alloc(32, 1))).toBeNull();
  });

  it('keeps the newest unreadable receipts of a route, and drops them with the route', async () => {
    await store().insertIntakeRoute(route());
    await store().insertIntakeRoute(route({ name: 'other', tokenDigest: Buffer.alloc(32, 7) }));
    for (let i = 1; i <= 4; i++) {
      await store().recordGarbledIntake(
        'kannel-eu',
        { at: new Date(NOW.getTime() + i), text: `t${i}`, pdu: null },
        3,
      );
    }
    await store().recordGarbledIntake('other', { at: NOW, text: 'x', pdu: '0001' }, 3);
    expect(await store().listGarbledIntake('kannel-eu', 10)).toStrictEqual(
      [4, 3, 2].map((i) => ({ at: new Date(NOW.getTime() + i), text: `t${i}`, pdu: null })),
    );
    expect(await store().listGarbledIntake('kannel-eu', 1)).toHaveLength(1);
    await store().deleteIntakeRoute('kannel-eu');
    expect(await store().listGarbledIntake('kannel-eu', 10)).toStrictEqual([]);
    expect(await store().listGarbledIntake('other', 10)).toStrictEqual([{ at: NOW, text: 'x', pdu: '0001' }]);
  });
});
