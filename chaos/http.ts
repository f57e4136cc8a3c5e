import { request } from 'node:http';

export interface HttpAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/**
 * One request on a connection of its own (no keep-alive). With a pooled connection the client can
 * send on a socket the server is closing as idle ("other side closed"), a race of the client's
 * making that would be counted against the service; here a reset or refusal is always the
 * server's doing (a crash, or a connection cut mid-request). Rejects with the socket error, or a
 * TimeoutError after `timeoutMs`.
 */
export function httpRequest(url: string, init: { method?: string; headers?: Record<string, string>; body?: string; timeoutMs: number }): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: init.method ?? 'GET', headers: init.headers, agent: false, signal: AbortSignal.timeout(init.timeoutMs) }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', (error: Error & { cause?: unknown }) => reject(error.name === 'AbortError' && error.cause instanceof Error ? error.cause : error));
    req.end(init.body);
  });
}
