import { afterEach, describe, expect, it, vi } from 'vitest';
import { WaybillClient, WaybillError } from '../src/index.js';
import { fakeFetch, json } from './helpers.js';

describe('new WaybillClient', () => {
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  it('falls back to WAYBILL_URL, WAYBILL_KEY and WAYBILL_SECRET', async () => {
    vi.stubEnv('WAYBILL_URL', 'http://env.test:9000/');
    vi.stubEnv('WAYBILL_KEY', 'ENVKEY01');
    vi.stubEnv('WAYBILL_SECRET', 'ENVSEC01');
    const { fetch, calls } = fakeFetch(() => json([]));
    const client = new WaybillClient({ fetch });
    expect(client.baseUrl).toBe('http://env.test:9000');
    await client.dlr.get('m-1');
    expect(calls[0]?.url.href).toBe('http://env.test:9000/dlr?key=ENVKEY01&secret=ENVSEC01&messageid=m-1');
  });

  it('prefers options over the environment', async () => {
    vi.stubEnv('WAYBILL_URL', 'http://env.test');
    const { fetch, calls } = fakeFetch(() => json([]));
    await new WaybillClient({ baseUrl: 'http://opt.test', key: 'K', secret: 'S', fetch }).dlr.get('m');
    expect(calls[0]?.url.host).toBe('opt.test');
  });

  it('keeps a path prefix of the base URL', async () => {
    const { fetch, calls } = fakeFetch(() => json([]));
    await new WaybillClient({ baseUrl: 'https://gw.test/waybill/', key: 'K', secret: 'S', fetch }).dlr.get(
      'm',
    );
    expect(calls[0]?.url.pathname).toBe('/waybill/dlr');
  });

  it('refuses a missing or bad configuration', () => {
    vi.stubEnv('WAYBILL_URL', '');
    vi.stubEnv('WAYBILL_KEY', '');
    vi.stubEnv('WAYBILL_SECRET', '');
    expect(() => new WaybillClient({ key: 'K', secret: 'S' })).toThrow(WaybillError);
    expect(() => new WaybillClient({ baseUrl: 'http://x.test' })).toThrow(/WAYBILL_KEY/);
    expect(() => new WaybillClient({ baseUrl: 'ftp://x.test', key: 'K', secret: 'S' })).toThrow(WaybillError);
    expect(
      () => new WaybillClient({ baseUrl: 'http://x.test', key: 'K', secret: 'S', maxRetries: -1 }),
    ).toThrow();
  });

  it('does not show the secret when inspected', () => {
    const client = new WaybillClient({ baseUrl: 'http://x.test', key: 'KEY00001', secret: 'SECRET01' });
    expect(JSON.stringify(client)).not.toContain('SECRET01');
  });
});
