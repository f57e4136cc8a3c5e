import type { Hono } from 'hono';
import type { AppEnv } from '../http/env.js';
import { readJson } from '../http/input.js';
import { scope } from '../http/middleware.js';
import { SCOPES } from '../auth/principal.js';
import type { Services } from '../shared/context.js';
import { recallBody } from './schemas.js';
import { recall } from './service.js';

export function registerRecallRoutes(app: Hono<AppEnv>, services: Services): void {
  app.post('/memories/recall', scope(SCOPES.read), async (c) => {
    const body = await readJson(c, recallBody);
    return c.json(await recall({ services, principal: c.get('principal') }, body));
  });
}
