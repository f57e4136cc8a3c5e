import type { Hono } from 'hono';
import type { AppEnv } from '../http/env.js';
import { readJson, readQuery } from '../http/input.js';
import { jobQuery, waitForJob } from '../events/job-wait.js';
import { scope } from '../http/middleware.js';
import { SCOPES } from '../auth/principal.js';
import { idParam } from '../memories/routes.js';
import type { JobQueue } from '../queue/types.js';
import { DomainError } from '../shared/errors.js';
import type { Services } from '../shared/context.js';
import { extractBody, idempotencyKey } from './schemas.js';
import { acceptExtraction, getJob } from './service.js';

export function registerExtractionRoutes(app: Hono<AppEnv>, services: Services, queue: JobQueue): void {
  app.post('/memories/extract', scope(SCOPES.write), async (c) => {
    const rawKey = c.req.header('idempotency-key');
    let key: string | undefined;
    if (rawKey !== undefined) {
      const parsed = idempotencyKey.safeParse(rawKey);
      if (!parsed.success) {
        throw new DomainError('validation_failed', 'the Idempotency-Key header is not valid', {
          errors: [{ path: 'header:Idempotency-Key', message: parsed.error.issues[0]?.message ?? 'invalid' }],
        });
      }
      key = parsed.data;
    }
    const body = await readJson(c, extractBody);
    const accepted = await acceptExtraction({ services, principal: c.get('principal') }, queue, body, key);
    c.header('Location', accepted.status_url);
    return c.json(accepted, 202);
  });

  app.get('/jobs/:id', scope(SCOPES.read), async (c) => {
    const ctx = { services, principal: c.get('principal') };
    const id = idParam(c.req.param('id'), 'job');
    const { wait } = readQuery(c, jobQuery);
    return c.json(wait ? await waitForJob(ctx, id, wait, services.notifier) : await getJob(ctx, id));
  });
}
