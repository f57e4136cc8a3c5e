import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serveHttp } from '../../../src/http/serve.js';
import { TEST_BACKEND, startTestApp, tokenFor, uniqueTenant, type TestApp } from '../../../test/support/harness.js';
import { deleteQueueKeys, llmAppEnv, uniqueQueuePrefix } from '../../../test/support/jobs.js';
import { TEST_REDIS_URL } from '../../../test/support/env.js';
import type { ScriptedLlm } from '../../../test/support/scripted-llm.js';

export const ALL_SCOPES = 'memories:read memories:write memories:delete';

/**
 * The real service over real HTTP on 127.0.0.1, with its extraction worker: on the `postgres`
 * project PostgreSQL (a database of its own) with Redis/BullMQ, on `pglite` the embedded backend
 * with the in-process queue, as `npm start` runs it. With `llm`, its models are the scripted
 * OpenAI-compatible server; without, the offline providers.
 */
export interface Service {
  url: string;
  app: TestApp;
  tenant: string;
  token(user: string, scope?: string): Promise<string>;
  close(): Promise<void>;
}

export async function startService(options: { llm?: ScriptedLlm; env?: Record<string, string> } = {}): Promise<Service> {
  const prefix = uniqueQueuePrefix('client');
  const env = options.llm
    ? llmAppEnv(options.llm, prefix, options.env)
    : { REDIS_URL: TEST_REDIS_URL, QUEUE_PREFIX: prefix, JOB_BACKOFF_MS: '50', ...options.env };
  const app = await startTestApp(env, { isolated: true });
  app.runtime.startWorker();
  let server: Server | undefined;
  const port = await new Promise<number>((resolve) => {
    server = serveHttp({ fetch: app.runtime.app.fetch, port: 0, hostname: '127.0.0.1' }, (info: AddressInfo) => resolve(info.port));
  });
  const tenant = uniqueTenant('client');
  return {
    url: `http://127.0.0.1:${port}`,
    app,
    tenant,
    token: (user, scope = ALL_SCOPES) => tokenFor({ tenant, user, scope }),
    async close() {
      await new Promise<void>((resolve) => {
        if (!server) return resolve();
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await app.close();
      if (TEST_BACKEND === 'postgres') await deleteQueueKeys(prefix);
    },
  };
}
