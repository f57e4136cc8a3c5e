/**
 * The HTTP stack alone, for `npm run bench -- ops`: hono on @hono/node-server, as the service
 * serves, with none of the service's work (no auth, validation, logging, metrics or database). Any
 * request is read whole (a JSON body parsed, as a route's would be) and answered with a JSON body
 * of the size asked for in `x-size`, so each route's call costs what its HTTP part costs. Prints
 * its port when listening.
 */
import { serve } from '@hono/node-server';
import { Hono } from 'hono';

const app = new Hono();
const bodies = new Map<number, string>();
app.all('*', async (c) => {
  if (c.req.method !== 'GET' && c.req.header('content-type')?.startsWith('application/json')) await c.req.json();
  const size = Math.max(2, Number(c.req.header('x-size') ?? 2));
  let body = bodies.get(size);
  if (body === undefined) bodies.set(size, (body = JSON.stringify({ x: 'x'.repeat(Math.max(0, size - 8)) })));
  return c.body(body, 200, { 'content-type': 'application/json' });
});
const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info) => process.stdout.write(`${info.port}\n`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
