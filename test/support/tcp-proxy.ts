import { createServer, connect, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy in front of a real server, to take it away from a service and give it back:
 * `refuse` (nothing listens: connection refused), `blackhole` (connections are accepted and
 * never answered; those already open are cut) and `forward` (back to normal).
 */
export interface TcpProxy {
  readonly port: number;
  /** `url` with its host and port replaced by the proxy's. */
  through(url: string): string;
  forward(): Promise<void>;
  blackhole(): void;
  refuse(): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpProxy(targetHost: string, targetPort: number): Promise<TcpProxy> {
  let mode: 'forward' | 'blackhole' = 'forward';
  const open = new Set<Socket>();
  let server: Server | undefined;

  const cutAll = () => {
    for (const socket of open) socket.destroy();
    open.clear();
  };
  const track = (socket: Socket) => {
    open.add(socket);
    socket.on('close', () => open.delete(socket));
    socket.on('error', () => {});
  };
  const accept = (client: Socket) => {
    track(client);
    if (mode === 'blackhole') return; // held open, never answered
    const upstream = connect(targetPort, targetHost);
    track(upstream);
    client.pipe(upstream);
    upstream.pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  };
  const listen = (port: number) =>
    new Promise<number>((resolve, reject) => {
      server = createServer(accept);
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve((server!.address() as { port: number }).port));
    });
  const stopListening = () => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));

  const port = await listen(0);
  let listening = true;
  return {
    port,
    through(url) {
      const u = new URL(url);
      u.hostname = '127.0.0.1';
      u.port = String(port);
      return u.toString();
    },
    async forward() {
      mode = 'forward';
      if (!listening) {
        await listen(port);
        listening = true;
      }
    },
    blackhole() {
      mode = 'blackhole';
      cutAll();
    },
    async refuse() {
      listening = false;
      const stopped = stopListening();
      cutAll();
      await stopped;
    },
    async close() {
      const stopped = listening ? stopListening() : Promise.resolve();
      cutAll();
      await stopped;
    },
  };
}
