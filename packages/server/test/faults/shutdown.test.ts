import { Agent, request } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { killAll, serve } from '../support/processes.js';

/**
 * SIGTERM under load (CONTRACT §11): the server stops accepting, lets every request in flight finish, closes
 * idle keep-alive connections cleanly and exits 0. A client on a keep-alive connection sees answers (never a
 * 503 "server is closing", never a reset of a request the server had started), then refused connections.
 */
afterAll(() => killAll());

describe('graceful shutdown', () => {
  it('finishes every request in flight and resets none while draining', async () => {
    const server = await serve(['--no-demo'], {
      DATABASE_URL: 'sqlite::memory:',
      WAYBILL_ACCESS_LOG: 'off',
      WAYBILL_RATE_PER_SECOND: '0',
    });
    const agent = new Agent({ connections: 8, pipelining: 1, keepAliveTimeout: 30_000 });
    const outcomes = { ok: 0, status503: 0, otherStatus: 0, refused: 0, reset: 0, other: 0 };
    let stopping = false;
    const loop = async () => {
      while (!stopping || outcomes.refused === 0) {
        try {
          const res = await request(`${server.url}/readyz`, { dispatcher: agent });
          await res.body.arrayBuffer();
          if (res.statusCode === 200) outcomes.ok++;
          else if (res.statusCode === 503) outcomes.status503++;
          else outcomes.otherStatus++;
        } catch (error) {
          const code = (error as { code?: string }).code ?? '';
          if (code === 'ECONNREFUSED') {
            outcomes.refused++;
            return;
          }
          if (code === 'ECONNRESET' || code === 'UND_ERR_SOCKET') outcomes.reset++;
          else outcomes.other++;
        }
        if (!stopping) continue;
      }
    };
    const loops = Array.from({ length: 8 }, loop);
    await new Promise((resolve) => setTimeout(resolve, 500));
    stopping = true;
    const exited = server.stop();
    await Promise.all(loops);
    await exited;
    await agent.close();
    console.log('shutdown under load:', outcomes);
    expect(outcomes.ok).toBeGreaterThan(100);
    expect(outcomes.status503).toBe(0);
    expect(outcomes.reset).toBe(0);
    expect(outcomes.other).toBe(0);
  }, 30_000);
});
