import { connect } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { engines } from '../support/engines.js';
import { ADMIN_TOKEN, type Harness, startHarness } from '../support/http.js';

/** Sends raw bytes to the listening server and resolves with everything it answers until it closes. */
function raw(app: FastifyInstance, bytes: string, options: { endAfterMs?: number } = {}): Promise<string> {
  const address = app.server.address();
  if (address === null || typeof address === 'string') throw new Error('not listening');
  return new Promise((resolve, reject) => {
    const socket = connect(address.port, '127.0.0.1');
    let answer = '';
    socket.on('data', (chunk) => {
      answer += chunk.toString('latin1');
    });
    socket.on('error', reject);
    socket.on('close', () => resolve(answer));
    socket.write(bytes);
    if (options.endAfterMs !== undefined) setTimeout(() => socket.destroy(), options.endAfterMs);
  });
}

function problemOf(answer: string): { status: number; headers: string; body: Record<string, unknown> } {
  const [head = '', body = ''] = answer.split('\r\n\r\n');
  return { status: Number(head.split(' ')[1]), headers: head.toLowerCase(), body: JSON.parse(body) };
}

// The HTTP layer is the same whatever the engine: one engine is enough here.
describe.each(engines().slice(0, 1))('$name malformed HTTP', (engine) => {
  let h: Harness;
  beforeEach(async () => {
    h = await startHarness(engine);
    await h.app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterEach(async () => {
    await h.close();
  });

  it('answers a request head the parser refuses with a 400 problem', async () => {
    for (const bytes of [
      'FOO /dlr HTTP/1.1\r\nHost: x\r\n\r\n',
      '\x00\x01\x02garbage\r\n\r\n',
      'GET /dlr HTTP/1.1\r\nBad Header\r\n\r\n',
    ]) {
      const { status, headers, body } = problemOf(await raw(h.app, bytes));
      expect(status).toBe(400);
      expect(headers).toContain('content-type: application/problem+json');
      expect(headers).toContain('x-request-id: ');
      expect(body).toMatchObject({
        type: 'about:blank',
        title: 'Bad Request',
        status: 400,
        code: 'invalid_request',
      });
      expect(JSON.stringify(body)).not.toContain('garbage');
    }
  });

  it('answers a head over 16 KiB with a 431 problem', async () => {
    const { status, body } = problemOf(
      await raw(h.app, `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`),
    );
    expect(status).toBe(431);
    expect(body).toMatchObject({ status: 431, code: 'headers_too_large' });
  });

  it('answers a path segment too long for the router with 414, without echoing it', async () => {
    const long = 'a'.repeat(500);
    const res = await h.inject({
      url: `/admin/v1/accounts/${long}`,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expect(res.statusCode).toBe(414);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.json()).toMatchObject({
      title: 'URI Too Long',
      status: 414,
      code: 'uri_too_long',
      requestId: res.headers['x-request-id'],
    });
    expect(res.body).not.toContain(long);
  });

  it('answers a URL it cannot decode with a 400 problem', async () => {
    const res = await h.inject({ url: '/dlr%zz' });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ status: 400, code: 'invalid_request' });
    expect(res.body).not.toContain('%zz');
  });

  it('answers 405 before reading the body', async () => {
    const res = await h.inject({
      method: 'PUT',
      url: '/dlr',
      headers: { 'content-type': 'application/json' },
      payload: '{',
    });
    expect(res.statusCode).toBe(405);
    expect(res.headers.allow).toBe('GET, HEAD');
    expect(res.json()).toMatchObject({ code: 'method_not_allowed' });
    const admin = await h.inject({
      method: 'DELETE',
      url: '/admin/v1/accounts',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'text/plain' },
      payload: 'x'.repeat(10),
    });
    expect(admin.statusCode).toBe(405);
  });

  it('closes a connection whose head does not arrive within 10 s, with a 408 problem', async () => {
    const started = Date.now();
    const answer = await raw(h.app, 'GET /healthz HTTP/1.1\r\nHost: x\r\n');
    const elapsed = Date.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(9_000);
    expect(elapsed).toBeLessThan(15_000);
    const { status, body } = problemOf(answer);
    expect(status).toBe(408);
    expect(body).toMatchObject({ code: 'request_timeout', status: 408 });
  }, 20_000);
});
