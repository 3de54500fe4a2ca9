import { Server } from 'node:net';
import type { FastifyInstance } from 'fastify';

/**
 * A graceful drain (CONTRACT §11) that resets no request. Node's `server.close()` also closes every idle
 * keep-alive connection at once, and a client may be sending its next request on one of them at that very
 * moment: that request is reset. So the drain is done in steps instead: stop accepting connections, answer
 * every request still arriving on an open connection with `Connection: close` (the client then opens no new
 * one here), close what is still idle after a grace period, and wait for the rest to finish their requests.
 */

const draining = new WeakSet<FastifyInstance>();

/** True once the app's drain has begun: its answers then close their connections. */
export const isDraining = (app: FastifyInstance): boolean => draining.has(app);

/** Marks the answers of a draining app `Connection: close`. Register once, on the root instance. */
export function registerDrainHeaders(app: FastifyInstance): void {
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (draining.has(app)) reply.header('connection', 'close');
    done(null, payload);
  });
}

/** How long a connection idle at the start of a drain may still bring a request before it is closed. */
const IDLE_GRACE_MS = 1000;

/**
 * Drains the app's server: resolves once every connection has ended, or at `deadlineMs`, when the rest are cut.
 * Call `app.close()` afterwards (its own `server.close()` then finds nothing left to close).
 */
export async function drainConnections(app: FastifyInstance, deadlineMs: number): Promise<void> {
  draining.add(app);
  const server = app.server;
  if (!server.listening) return;
  const ended = new Promise<void>((resolve) => server.once('close', () => resolve()));
  // The net.Server close: stops accepting, and leaves the open connections alone.
  Server.prototype.close.call(server);
  const idle = setTimeout(() => server.closeIdleConnections(), Math.min(IDLE_GRACE_MS, deadlineMs));
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(true), deadlineMs);
  });
  try {
    if (await Promise.race([ended.then(() => false), late])) {
      app.log.warn('requests still running at the shutdown deadline: closing their connections');
      server.closeAllConnections();
      await ended;
    }
  } finally {
    clearTimeout(idle);
    clearTimeout(timer);
  }
}
