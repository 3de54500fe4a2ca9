import net from 'node:net';

/** What the proxy does with traffic. */
export type ProxyMode = 'open' | 'closed' | 'black-hole' | 'slow';

interface Pair {
  client: net.Socket;
  upstream: net.Socket | null;
}

/**
 * A TCP proxy in front of a server (PostgreSQL here) that a test can break and mend:
 *
 * - `close()`: stop listening (new connections are refused) and destroy every open connection;
 * - `blackHole()`: keep accepting and keep every socket open, but forward nothing in either direction (what a
 *   silently dropping network looks like: no reset, no answer). Bytes are discarded, not held back, so a
 *   connection that carried traffic during the black hole is unusable afterwards, as a desynchronized protocol
 *   stream would be;
 * - `slow(ms)`: forward everything, each chunk `ms` late (a congested link);
 * - `restore()`: forward again; connections accepted during a black hole never reached the server and are
 *   dropped.
 */
export class TcpProxy {
  #mode: ProxyMode = 'open';
  #delayMs = 0;
  readonly #pairs = new Set<Pair>();
  readonly #server: net.Server;

  private constructor(
    readonly target: { host: string; port: number },
    public port: number,
  ) {
    this.#server = net.createServer((socket) => this.#accept(socket));
  }

  static async start(target: { host: string; port: number }): Promise<TcpProxy> {
    const proxy = new TcpProxy(target, 0);
    await proxy.#listen(0);
    return proxy;
  }

  get mode(): ProxyMode {
    return this.#mode;
  }

  /** Refuses new connections and destroys the open ones. */
  async close(): Promise<void> {
    this.#mode = 'closed';
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    this.#dropAll();
    await closed;
  }

  /** Accepts and keeps sockets, forwards nothing. */
  blackHole(): void {
    this.#mode = 'black-hole';
  }

  /** Forwards each chunk `delayMs` late, both ways. */
  slow(delayMs: number): void {
    this.#delayMs = delayMs;
    this.#mode = 'slow';
  }

  /** Back to forwarding; listens again after `close()` (same port). */
  async restore(): Promise<void> {
    const wasClosed = this.#mode === 'closed';
    this.#mode = 'open';
    for (const pair of [...this.#pairs]) {
      if (pair.upstream === null) this.#drop(pair);
    }
    if (wasClosed) await this.#listen(this.port);
  }

  /** Stops everything, for good. */
  async stop(): Promise<void> {
    this.#dropAll();
    if (this.#server.listening) await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  async #listen(port: number): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.#server.once('error', reject);
      this.#server.listen(port, '127.0.0.1', () => {
        this.#server.off('error', reject);
        resolve();
      });
    });
    this.port = (this.#server.address() as net.AddressInfo).port;
  }

  #accept(client: net.Socket): void {
    const pair: Pair = { client, upstream: null };
    this.#pairs.add(pair);
    client.on('error', () => this.#drop(pair));
    client.on('close', () => this.#drop(pair));
    if (this.#mode === 'black-hole') {
      // Never reaches the server; the client waits for an answer that does not come.
      client.on('data', () => {});
      return;
    }
    const upstream = net.connect(this.target.port, this.target.host);
    pair.upstream = upstream;
    upstream.on('error', () => this.#drop(pair));
    upstream.on('close', () => this.#drop(pair));
    this.#forward(client, upstream);
    this.#forward(upstream, client);
  }

  /** Forwards in order: a chunk delayed by `slow` keeps every later chunk behind it. */
  #forward(from: net.Socket, to: net.Socket): void {
    const queue: { chunk: Buffer; at: number }[] = [];
    let timer: NodeJS.Timeout | null = null;
    const drain = () => {
      timer = null;
      while (queue.length > 0 && (queue[0]?.at ?? 0) <= Date.now()) {
        const next = queue.shift();
        if (next && !to.destroyed) to.write(next.chunk);
      }
      const head = queue[0];
      if (head) timer = setTimeout(drain, Math.max(0, head.at - Date.now()));
    };
    from.on('data', (chunk: Buffer) => {
      if (this.#mode === 'black-hole') return;
      const delay = this.#mode === 'slow' ? this.#delayMs : 0;
      if (delay === 0 && queue.length === 0) {
        to.write(chunk);
        return;
      }
      queue.push({ chunk, at: Date.now() + delay });
      if (timer === null) timer = setTimeout(drain, delay);
    });
    to.on('close', () => {
      if (timer !== null) clearTimeout(timer);
      queue.length = 0;
    });
  }

  #drop(pair: Pair): void {
    if (!this.#pairs.delete(pair)) return;
    pair.client.destroy();
    pair.upstream?.destroy();
  }

  #dropAll(): void {
    for (const pair of [...this.#pairs]) this.#drop(pair);
  }
}
