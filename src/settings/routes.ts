import type { Hono } from 'hono';
import { SCOPES } from '../auth/principal.js';
import type { AppEnv } from '../http/env.js';
import { readJson } from '../http/input.js';
import { scope } from '../http/middleware.js';
import type { Services } from '../shared/context.js';
import { settingsSchema } from './schemas.js';
import { getSettings, putSettings } from './service.js';

export function registerSettingsRoutes(app: Hono<AppEnv>, services: Services): void {
  app.get('/settings', scope(SCOPES.read), async (c) => c.json(await getSettings({ services, principal: c.get('principal') })));

  app.put('/settings', scope(SCOPES.admin), async (c) => {
    const body = await readJson(c, settingsSchema);
    return c.json(await putSettings({ services, principal: c.get('principal') }, body));
  });
}
