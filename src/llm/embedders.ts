import type OpenAI from 'openai';
import type { Config, EmbedderKind } from '../config.js';
import { LexicalEmbedder } from './lexical-embedder.js';
import { LOCAL_EMBEDDING_DIMENSIONS, LOCAL_EMBEDDING_MODEL, LocalEmbedder } from './local-embedder.js';
import type { Embedder, ModelCallObserver } from './types.js';

/** What fills a database's vectors; the database records it (src/db/embedder-record.ts). */
export interface EmbedderSpec {
  kind: EmbedderKind;
  model: string;
  dimensions: number;
}

/** The lexical embedder has no model; this names its feature scheme in the record. */
export const LEXICAL_EMBEDDING_MODEL = 'hashed-word-features';

/** The embedder the configuration asks for, before the database has its say. */
export function configuredEmbedder(config: Pick<Config, 'embeddings' | 'llm'>): EmbedderSpec {
  switch (config.embeddings.kind) {
    case 'local':
      return { kind: 'local', model: LOCAL_EMBEDDING_MODEL, dimensions: LOCAL_EMBEDDING_DIMENSIONS };
    case 'lexical':
      return { kind: 'lexical', model: LEXICAL_EMBEDDING_MODEL, dimensions: config.llm.embeddingDimensions };
    case 'openai':
      return { kind: 'openai', model: config.llm.embeddingModel, dimensions: config.llm.embeddingDimensions };
  }
}

/** e.g. "local:universal-sentence-encoder-lite (512 dimensions)", for messages. */
export function describeEmbedder(spec: EmbedderSpec): string {
  return `${spec.kind}:${spec.model} (${spec.dimensions} dimensions)`;
}

/**
 * An embedder: `spec` when given (the one the database settled on), else the endpoint when one is
 * set, else the lexical one. `client` lets the caller share one OpenAI client between chat and
 * embeddings. The openai client library (~13 MiB) loads only for the OpenAI embedder.
 */
export async function createEmbedder(llm: Config['llm'], client?: OpenAI, observer?: ModelCallObserver, spec?: EmbedderSpec): Promise<Embedder> {
  const kind = spec?.kind ?? (llm.remote ? 'openai' : 'lexical');
  const dimensions = spec?.dimensions ?? llm.embeddingDimensions;
  if (kind === 'local') return new LocalEmbedder();
  if (kind === 'openai') {
    const { OpenAIEmbedder, createOpenAIClient } = await import('./openai-embedder.js');
    return new OpenAIEmbedder({
      client: client ?? createOpenAIClient(llm),
      model: spec?.model ?? llm.embeddingModel,
      dimensions,
      ...(observer ? { observer } : {}),
    });
  }
  return new LexicalEmbedder(dimensions);
}
