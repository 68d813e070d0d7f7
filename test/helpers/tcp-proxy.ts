import net from 'node:net';

/**
 * A TCP proxy on 127.0.0.1 in front of a server (Postgres, here), that a test can cut: `cut()`
 * destroys every open connection and refuses new ones — the database is unreachable, as after a
 * network partition — and `restore()` lets connections through again. The server itself keeps
 * running, so what the test sees is exactly the client side of an outage.
 */
export class TcpProxy {
  readonly #server: net.Server;
  readonly #sockets = new Set<net.Socket>();
  readonly #target: { host: string; port: number };
  #cut = false;
  port = 0;

  private constructor(target: { host: string; port: number }) {
    this.#target = target;
    this.#server = net.createServer((client) => this.#accept(client));
  }

  /** Starts a proxy to `target` on a free loopback port. */
  static async start(target: { host: string; port: number }): Promise<TcpProxy> {
    const proxy = new TcpProxy(target);
    await new Promise<void>((resolve) => proxy.#server.listen(0, '127.0.0.1', resolve));
    proxy.port = (proxy.#server.address() as net.AddressInfo).port;
    return proxy;
  }

  /** `url` with its host and port replaced by the proxy's. */
  static rewrite(url: string, port: number): string {
    const u = new URL(url);
    u.hostname = '127.0.0.1';
    u.port = String(port);
    return u.toString();
  }

  get isCut(): boolean {
    return this.#cut;
  }

  /** Connections open through the proxy right now. */
  get connections(): number {
    return this.#sockets.size;
  }

  cut(): void {
    this.#cut = true;
    for (const socket of this.#sockets) socket.destroy();
    this.#sockets.clear();
  }

  restore(): void {
    this.#cut = false;
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #accept(client: net.Socket): void {
    if (this.#cut) {
      // Refused the way a dead peer refuses: reset, not a clean close.
      client.resetAndDestroy();
      return;
    }
    const upstream = net.connect(this.#target.port, this.#target.host);
    this.#sockets.add(client);
    this.#sockets.add(upstream);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      this.#sockets.delete(client);
      this.#sockets.delete(upstream);
    };
    client.on('error', drop);
    upstream.on('error', drop);
    client.on('close', drop);
    upstream.on('close', drop);
    client.pipe(upstream);
    upstream.pipe(client);
  }
}
