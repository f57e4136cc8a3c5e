import pino, { type Logger } from 'pino';
import type { Config } from './config.js';
import { resolveJwtSecret } from './auth/dev-secret.js';
import { createTokenVerifier } from './auth/verifier.js';
import type { Database } from './db/client.js';
import { openDatabase, prepareDatabase } from './db/open.js';
import { buildApp } from './http/app.js';
import { createEmbedder } from './llm/embedders.js';
import type { Services } from './shared/context.js';

export interface Runtime {
  config: Config;
  services: Services;
  app: ReturnType<typeof buildApp>;
  /** Where a generated development secret lives, when one is in use. */
  devSecretFile: string | undefined;
  close(): Promise<void>;
}

export interface RuntimeOptions {
  logger?: Logger;
  database?: Database;
  clock?: () => Date;
}

/** Builds every long-lived part once; main.ts serves it and tests drive it in-process. */
export async function createRuntime(config: Config, options: RuntimeOptions = {}): Promise<Runtime> {
  const logger = options.logger ?? pino({ level: config.logLevel });
  const database = options.database ?? (await openDatabase(config));
  try {
    await prepareDatabase(database, config.migrateOnStart);
  } catch (error) {
    if (!options.database) await database.close();
    throw error;
  }
  const { secret, generatedAt } = resolveJwtSecret(config);
  const verifier = createTokenVerifier({ ...config.auth, jwtSecret: secret });
  const services: Services = {
    config,
    database,
    embedder: createEmbedder(config.llm),
    clock: options.clock ?? (() => new Date()),
    logger,
  };
  const app = buildApp({ services, verifier });
  return {
    config,
    services,
    app,
    devSecretFile: generatedAt,
    async close() {
      if (!options.database) await database.close();
    },
  };
}
