import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { Webhook } from 'standardwebhooks';

export interface Received {
  id: string;
  type: string;
  data: Record<string, any>;
  raw: string;
  verified: boolean;
}

/**
 * A real HTTP receiver on loopback that verifies each delivery's signature with the
 * standardwebhooks package. `answer` decides the status (default 200); it may also never answer.
 */
export interface Receiver {
  url: string;
  received: Received[];
  /** Every request, verified or not, in arrival order (retries included). */
  requests: Array<{ id: string; status: number }>;
  setSecret(secret: string): void;
  answer: (request: { id: string; attempt: number }) => number | 'hang';
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  let verifier: Webhook | undefined;
  const attempts = new Map<string, number>();
  const hanging: ServerResponse[] = [];
  const receiver: Receiver = {
    url: '',
    received: [],
    requests: [],
    setSecret(secret) {
      verifier = new Webhook(secret);
    },
    answer: () => 200,
    async close() {
      for (const res of hanging) res.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
    },
  };
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const id = String(req.headers['webhook-id'] ?? '');
      const attempt = (attempts.get(id) ?? 0) + 1;
      attempts.set(id, attempt);
      const status = receiver.answer({ id, attempt });
      if (status === 'hang') {
        receiver.requests.push({ id, status: 0 });
        hanging.push(res);
        return;
      }
      receiver.requests.push({ id, status });
      if (status >= 200 && status < 300) {
        let verified = false;
        try {
          verifier?.verify(raw, req.headers as Record<string, string>);
          verified = true;
        } catch {
          verified = false;
        }
        const body = JSON.parse(raw) as { type: string; data: Record<string, any> };
        receiver.received.push({ id, type: body.type, data: body.data, raw, verified });
      }
      res.writeHead(status).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const address = server.address();
  receiver.url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/hook`;
  return receiver;
}
