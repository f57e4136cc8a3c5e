import { SCOPES } from '../auth/principal.js';
import { defineRoute, jsonBody, jsonResponse, type Router } from '../http/routing.js';
import type { Services } from '../shared/context.js';
import { defaultSettings, settingsAnswer, settingsSchema, type Settings } from './schemas.js';
import { getSettings as readSettings, putSettings as writeSettings, SETTINGS_CACHE_TTL_MS } from './service.js';

const EXAMPLE: Settings = {
  extraction: {
    instructions: 'Keep what the user eats and where they live; skip everything about their work.',
    categories: [
      { name: 'diet', description: 'food, allergies and diet' },
      { name: 'home', description: 'where the user lives' },
      { name: 'job', description: 'work and career' },
    ],
    exclude_categories: ['job'],
  },
  pii: { mode: 'redact' },
  retention: { default_ttl_days: 365, by_category: { home: 30 } },
};

export const getSettings = defineRoute({
  method: 'get',
  path: '/settings',
  operationId: 'getSettings',
  tags: ['settings'],
  summary: "The tenant's settings (extraction guidance, PII mode, retention)",
  description: `The token's tenant's settings, every key present; a tenant that never set any gets the defaults.`,
  scope: SCOPES.read,
  responses: { 200: jsonResponse(settingsAnswer, 'The settings.', defaultSettings()) },
});

export const putSettings = defineRoute({
  method: 'put',
  path: '/settings',
  operationId: 'putSettings',
  tags: ['settings'],
  summary: "Replace the tenant's settings",
  description: `Replaces the settings whole: a missing key takes its default. They apply from then on: at once
in the process that answered, within ${SETTINGS_CACHE_TTL_MS / 1000} seconds in every other
(each process keeps a tenant's settings that long). A job uses the settings in force when it
runs, except that its transcript was redacted (or not) under the \`pii.mode\` in force when it
was accepted.`,
  scope: SCOPES.admin,
  request: { body: jsonBody(settingsSchema, EXAMPLE) },
  responses: { 200: jsonResponse(settingsAnswer, 'The settings now in force, every key present.', EXAMPLE) },
});

export const settingsRoutes = [getSettings, putSettings];

export function registerSettingsRoutes(app: Router, services: Services): void {
  app.openapi(getSettings, async (c) => c.json(await readSettings({ services, principal: c.get('principal') }), 200));
  app.openapi(putSettings, async (c) => c.json(await writeSettings({ services, principal: c.get('principal') }, c.req.valid('json')), 200));
}
