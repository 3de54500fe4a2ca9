import type { LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';

/**
 * Asserts an RFC 9457 problem answer as CONTRACT §8 pins it — status, media type, `type`, `code`, a non-empty
 * `title` and `detail`, and the request id of the answer — and returns its body for further checks.
 */
export function expectProblem(
  res: LightMyRequestResponse,
  status: number,
  code: string,
): Record<string, unknown> {
  expect(res.statusCode, res.body).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  const body = res.json() as Record<string, unknown>;
  expect(body).toMatchObject({ type: 'about:blank', status, code });
  expect(typeof body.title).toBe('string');
  expect(body.title).not.toBe('');
  expect(typeof body.detail).toBe('string');
  expect(body.detail).not.toBe('');
  expect(body.requestId).toBe(res.headers['x-request-id']);
  return body;
}
