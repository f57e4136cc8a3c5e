import { sql } from 'drizzle-orm';
import type { Config, EmbedderKind } from '../config.js';
import { LEXICAL_EMBEDDING_MODEL, configuredEmbedder, describeEmbedder, type EmbedderSpec } from '../llm/embedders.js';
import { query, type Database, type Db } from './client.js';

/**
 * A database keeps the embedder it was filled with (migration 0005 keeps the record): vectors of
 * two embedders are not comparable, so start-up never mixes them and never re-embeds on its own.
 */

export interface EmbedderRecord extends EmbedderSpec {
  /** Set while `npm run db:reembed` is under way: the embedder it is moving the rows to. */
  target: EmbedderSpec | undefined;
  /** The last row (in key order) that already holds the target's vector. */
  resumeAfter: { tenantId: string; id: string } | undefined;
}

export interface StoredEmbedding {
  record: EmbedderRecord | undefined;
  /** The size of a stored vector; undefined when the database holds no memory. */
  storedDimensions: number | undefined;
}

export class EmbedderMismatchError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EmbedderMismatchError';
  }
}

const REEMBED_HINT = 'or run `npm run db:reembed` (with the service stopped) to re-embed it';

/**
 * The embedder this start serves with, from the configuration and what the database holds:
 * - a database without memories takes the configured embedder (and records it);
 * - one with memories goes on with its own, the recorded one (or, for a database filled before
 *   the record existed, the embedder the configuration then implied: the endpoint's when one is
 *   set, else the lexical one, at the size found), unless EMBEDDINGS, EMBEDDING_DIMENSIONS or
 *   EMBEDDING_MODEL is set to something else: then start-up stops with one line;
 * - an unfinished re-embed stops start-up: the vectors are mixed until it ends.
 */
export function settleEmbedder(config: Pick<Config, 'embeddings' | 'llm'>, stored: StoredEmbedding): { spec: EmbedderSpec; record: boolean } {
  const { record, storedDimensions } = stored;
  if (record?.target) {
    throw new EmbedderMismatchError(
      `a re-embed of this database to ${describeEmbedder(record.target)} is unfinished: run \`npm run db:reembed\` with the same settings to finish it`,
    );
  }
  if (storedDimensions === undefined) {
    const configured = configuredEmbedder(config);
    const same = record && sameSpec(record, configured);
    return { spec: configured, record: !same };
  }
  const own: EmbedderSpec = record
    ? { kind: record.kind, model: record.model, dimensions: record.dimensions }
    : config.llm.remote
      ? { kind: 'openai', model: config.llm.embeddingModel, dimensions: storedDimensions }
      : { kind: 'lexical', model: LEXICAL_EMBEDDING_MODEL, dimensions: storedDimensions };
  const filledWith = `this database was filled by ${describeEmbedder(own)}`;
  const e = config.embeddings;
  if (e.explicit && e.kind !== own.kind) {
    throw new EmbedderMismatchError(`EMBEDDINGS=${e.kind} does not match: ${filledWith}; unset EMBEDDINGS to go on with it, ${REEMBED_HINT}`);
  }
  if (e.dimensionsExplicit && config.llm.embeddingDimensions !== own.dimensions) {
    throw new EmbedderMismatchError(
      `EMBEDDING_DIMENSIONS=${config.llm.embeddingDimensions} does not match: ${filledWith}; unset EMBEDDING_DIMENSIONS to go on with it, ${REEMBED_HINT}`,
    );
  }
  if (own.kind === 'openai' && e.modelExplicit && config.llm.embeddingModel !== own.model) {
    throw new EmbedderMismatchError(
      `EMBEDDING_MODEL=${config.llm.embeddingModel} does not match: ${filledWith}; unset EMBEDDING_MODEL to go on with it, ${REEMBED_HINT}`,
    );
  }
  if (own.kind === 'openai' && !config.llm.remote) {
    throw new EmbedderMismatchError(`${filledWith}: set OPENAI_API_KEY or OPENAI_BASE_URL to go on with it, ${REEMBED_HINT}`);
  }
  return { spec: own, record: !record };
}

export function sameSpec(a: EmbedderSpec, b: EmbedderSpec): boolean {
  return a.kind === b.kind && a.model === b.model && a.dimensions === b.dimensions;
}

interface RecordRow {
  kind: string;
  model: string;
  dimensions: number;
  target_kind: string | null;
  target_model: string | null;
  target_dimensions: number | null;
  resume_tenant: string | null;
  resume_id: string | null;
}

/** The record and a stored vector's size, as the login role (owner or application role) sees them. */
export async function readStoredEmbedding(db: Db): Promise<StoredEmbedding> {
  const [row] = await query<RecordRow>(
    db,
    sql`select kind, model, dimensions, target_kind, target_model, target_dimensions, resume_tenant, resume_id::text as resume_id
        from engram_embedder where id = 1`,
  );
  const [dims] = await query<{ dims: number | null }>(db, sql`select engram_stored_dimensions() as dims`);
  return {
    record: row ? recordOf(row) : undefined,
    storedDimensions: dims?.dims == null ? undefined : Number(dims.dims),
  };
}

function recordOf(row: RecordRow): EmbedderRecord {
  return {
    kind: row.kind as EmbedderKind,
    model: row.model,
    dimensions: Number(row.dimensions),
    target:
      row.target_kind && row.target_model && row.target_dimensions != null
        ? { kind: row.target_kind as EmbedderKind, model: row.target_model, dimensions: Number(row.target_dimensions) }
        : undefined,
    resumeAfter: row.resume_tenant && row.resume_id ? { tenantId: row.resume_tenant, id: row.resume_id } : undefined,
  };
}

/** Records `spec` as the database's embedder, with no re-embed under way. */
export async function writeEmbedderRecord(db: Db, spec: EmbedderSpec): Promise<void> {
  await db.execute(sql`
    insert into engram_embedder (id, kind, model, dimensions) values (1, ${spec.kind}, ${spec.model}, ${spec.dimensions})
    on conflict (id) do update set kind = excluded.kind, model = excluded.model, dimensions = excluded.dimensions,
      target_kind = null, target_model = null, target_dimensions = null, resume_tenant = null, resume_id = null, updated_at = now()`);
}

/** Start-up: the embedder this database serves with, recorded when it was not yet. */
export async function settleDatabaseEmbedder(database: Database, config: Pick<Config, 'embeddings' | 'llm'>): Promise<EmbedderSpec> {
  const { spec, record } = settleEmbedder(config, await readStoredEmbedding(database.db));
  if (record) await writeEmbedderRecord(database.db, spec);
  return spec;
}
