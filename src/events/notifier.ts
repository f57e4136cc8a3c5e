import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Database } from '../db/client.js';
import type { PgliteDatabase } from '../db/pglite.js';
import { detachedFromRequest } from '../shared/timeout.js';

/** Channels the migrations' triggers NOTIFY on (at commit, never for a rolled-back change). */
export const CHANNELS = { jobs: 'engram_jobs', webhooks: 'engram_webhooks' } as const;
export type Channel = (typeof CHANNELS)[keyof typeof CHANNELS];

/**
 * Database notifications fanned out in-process: on PostgreSQL one dedicated LISTEN connection
 * for the whole process (outside the pool, so waiters hold no pooled connection); embedded,
 * PGlite's own in-process notifications. `ready` is false while the listener is not connected:
 * callers then fall back to polling.
 */
export interface Notifier {
  readonly ready: boolean;
  subscribe(channel: Channel, listener: (payload: string) => void): () => void;
  close(): Promise<void>;
}

export function createNotifier(config: Config, database: Database, logger: Logger): Notifier {
  const listeners = new Map<Channel, Set<(payload: string) => void>>();
  const fanOut = (channel: Channel) => (payload: string) => {
    for (const listener of listeners.get(channel) ?? []) {
      try {
        // The embedded database delivers a notification inside the request that committed it.
        detachedFromRequest(() => listener(payload));
      } catch (error) {
        logger.warn({ channel, err: (error as Error).name }, 'notification listener failed');
      }
    }
  };
  let ready = false;
  let close: () => Promise<void> = async () => {};

  if (database.kind === 'pglite' && 'client' in database) {
    const client = (database as PgliteDatabase).client;
    const unsubscribes = Promise.all(Object.values(CHANNELS).map((channel) => client.listen(channel, fanOut(channel))));
    unsubscribes.then(
      () => {
        ready = true;
      },
      (error: unknown) => logger.warn({ err: (error as Error).name }, 'embedded notifications unavailable; polling'),
    );
    close = async () => {
      ready = false;
      const done = await unsubscribes.catch(() => []);
      if (!client.closed) await Promise.all(done.map((unsubscribe) => unsubscribe().catch(() => {})));
    };
  } else if (config.databaseUrl) {
    const { databaseUrl } = config;
    let stopped = false;
    // postgres.js loads here, not at module load: the embedded start never needs it.
    const connected = import('postgres').then(({ default: postgres }) => {
      if (stopped) return undefined;
      const sql = postgres(databaseUrl, {
        max: 1,
        onnotice: () => {},
        connect_timeout: config.timeouts.dbConnectMs / 1000,
        connection: { application_name: 'engram-listener' },
      });
      const listening = Object.values(CHANNELS).map((channel) =>
        sql.listen(channel, fanOut(channel), () => {
          // Called on every (re)connect: notifications sent while disconnected were missed, so wake
          // everyone to look again.
          ready = true;
          fanOut(channel)('');
        }),
      );
      Promise.all(listening).catch((error: unknown) => {
        if (!stopped) logger.warn({ err: (error as Error).name }, 'database listener unavailable; polling');
      });
      return sql;
    });
    close = async () => {
      stopped = true;
      ready = false;
      const sql = await connected;
      await sql?.end({ timeout: 2 }).catch(() => {});
    };
  }

  return {
    get ready() {
      return ready;
    },
    subscribe(channel, listener) {
      let set = listeners.get(channel);
      if (!set) listeners.set(channel, (set = new Set()));
      set.add(listener);
      return () => set.delete(listener);
    },
    close: () => close(),
  };
}
