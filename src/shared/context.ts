import type { Config } from '../config.js';
import type { ServerKeys } from '../auth/server-keys.js';
import type { Database } from '../db/client.js';
import type { Embedder } from '../llm/types.js';
import type { Principal } from '../auth/principal.js';
import type { Logger } from 'pino';
import type { Notifier } from '../events/notifier.js';

/** Long-lived dependencies, built once in main.ts (or by a test) and passed to every use case. */
export interface Services {
  config: Config;
  database: Database;
  embedder: Embedder;
  clock: () => Date;
  logger: Logger;
  /** Keys for cursors and erasure receipts, derived from the server secret. */
  keys: ServerKeys;
  /** Called after a user's data is erased, to drop their queued jobs outside the database too. */
  onUserErased?: (tenantId: string, jobIds: string[]) => Promise<void>;
  /** Hears what use cases measure (src/observability/metrics.ts implements it); optional. */
  metrics?: ServiceMetrics;
  /** Database notifications (a job finished, events queued): GET /jobs/{id}?wait= sleeps on them. */
  notifier?: Notifier;
}

export interface ServiceMetrics {
  observeRecall(durationMs: number, candidates: number): void;
  /** Expired memories erased on the write path (a write erases its user's expired rows first). */
  observeMemoriesExpired(count: number): void;
}

/** What a use case needs for one request: the services and who is asking. */
export interface RequestContext {
  services: Services;
  principal: Principal;
}
