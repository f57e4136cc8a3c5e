import type { Config } from '../config.js';
import { createEmbedder, type EmbedderSpec } from '../llm/embedders.js';
import type { Embedder, ModelCallObserver } from '../llm/types.js';
import { OfflineExtractor } from './offline-extractor.js';
import { OfflineResolver } from './offline-resolver.js';
import type { Extractor, Resolver } from './types.js';

export interface Providers {
  embedder: Embedder;
  extractor: Extractor;
  resolver: Resolver;
}

/**
 * The OpenAI-compatible providers when an endpoint is configured, else the offline ones.
 * `observer` hears of every model call (metrics); `embedder` is the one the database settled on.
 * The LLM side (the openai library, ~13 MiB) loads only when an endpoint is configured.
 */
export async function createProviders(llm: Config['llm'], observer?: ModelCallObserver, embedder?: EmbedderSpec): Promise<Providers> {
  if (!llm.remote) {
    return { embedder: await createEmbedder(llm, undefined, undefined, embedder), extractor: new OfflineExtractor(), resolver: new OfflineResolver() };
  }
  const [{ createOpenAIClient }, { StructuredChat }, { LlmExtractor }, { LlmResolver }] = await Promise.all([
    import('../llm/openai-embedder.js'),
    import('../llm/chat.js'),
    import('./llm-extractor.js'),
    import('./llm-resolver.js'),
  ]);
  const client = createOpenAIClient(llm);
  const chat = new StructuredChat({ client, model: llm.model, ...(observer ? { observer } : {}) });
  return { embedder: await createEmbedder(llm, client, observer, embedder), extractor: new LlmExtractor(chat), resolver: new LlmResolver(chat) };
}
