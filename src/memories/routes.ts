import type { Hono } from 'hono';
import { z } from 'zod';
import * as erasure from '../erasure/service.js';
import type { AppEnv } from '../http/env.js';
import { readJson, readQuery } from '../http/input.js';
import { scope } from '../http/middleware.js';
import { SCOPES } from '../auth/principal.js';
import { notFound } from '../shared/errors.js';
import type { Services } from '../shared/context.js';
import { addMemoriesBody, deleteMemoriesBody, listMemoriesQuery, patchMemoryBody } from './schemas.js';
import * as memories from './service.js';

const uuid = z.uuid();

/** A malformed id cannot name anything the caller may see: 404, like any unknown id. */
export function idParam(value: string | undefined, what: string): string {
  const parsed = uuid.safeParse(value);
  if (!parsed.success) throw notFound(what);
  return parsed.data.toLowerCase();
}

export function registerMemoryRoutes(app: Hono<AppEnv>, services: Services): void {
  const ctx = (principal: AppEnv['Variables']['principal']) => ({ services, principal });

  app.post('/memories', scope(SCOPES.write), async (c) => {
    const body = await readJson(c, addMemoriesBody);
    return c.json({ memories: await memories.addMemories(ctx(c.get('principal')), body) }, 201);
  });

  app.get('/memories', scope(SCOPES.read), async (c) => {
    const query = readQuery(c, listMemoriesQuery);
    return c.json(await memories.listMemories(ctx(c.get('principal')), query));
  });

  app.post('/memories/delete', scope(SCOPES.delete), async (c) => {
    const body = await readJson(c, deleteMemoriesBody);
    return c.json(await erasure.deleteMemories(ctx(c.get('principal')), body));
  });

  app.get('/memories/:id', scope(SCOPES.read), async (c) => {
    return c.json(await memories.getMemory(ctx(c.get('principal')), idParam(c.req.param('id'), 'memory')));
  });

  app.patch('/memories/:id', scope(SCOPES.write), async (c) => {
    const id = idParam(c.req.param('id'), 'memory');
    const body = await readJson(c, patchMemoryBody);
    return c.json(await memories.patchMemory(ctx(c.get('principal')), id, body));
  });

  app.delete('/memories/:id', scope(SCOPES.delete), async (c) => {
    await erasure.deleteMemory(ctx(c.get('principal')), idParam(c.req.param('id'), 'memory'));
    return c.body(null, 204);
  });

  app.get('/memories/:id/history', scope(SCOPES.read), async (c) => {
    return c.json(await memories.getHistory(ctx(c.get('principal')), idParam(c.req.param('id'), 'memory')));
  });
}
