import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { HonoAdapter } from '@bull-board/hono';
import { serveStatic } from '@hono/node-server/serve-static';
import { Hono } from 'hono';
import type { BullJobQueue } from './bullmq.js';

/**
 * bull-board's read-only app over the BullMQ extraction queue, mounted at `basePath`. A module of
 * its own so that bull-board loads only when the dashboard is first asked for (see dashboard.ts).
 */
export function createQueueBoard(queue: BullJobQueue, basePath: string): Hono {
  const adapter = new HonoAdapter(serveStatic);
  adapter.setBasePath(basePath);
  createBullBoard({
    queues: [new BullMQAdapter(queue.queue, { readOnlyMode: true })],
    serverAdapter: adapter,
    options: { uiConfig: { boardTitle: 'Engram queues' } },
  });
  return new Hono().route(basePath, adapter.registerPlugin());
}
