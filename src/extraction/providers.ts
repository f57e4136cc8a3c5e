import type { Config } from '../config.js';
import { StructuredChat } from '../llm/chat.js';
import { createEmbedder, type EmbedderSpec } from '../llm/embedders.js';
import { createOpenAIClient } from '../llm/openai-embedder.js';
import type { Embedder, ModelCallObserver } from '../llm/types.js';
import { LlmExtractor } from './llm-extractor.js';
import { LlmResolver } from './llm-resolver.js';
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
 */
export function createProviders(llm: Config['llm'], observer?: ModelCallObserver, embedder?: EmbedderSpec): Providers {
  if (!llm.remote) {
    return { embedder: createEmbedder(llm, undefined, undefined, embedder), extractor: new OfflineExtractor(), resolver: new OfflineResolver() };
  }
  const client = createOpenAIClient(llm);
  const chat = new StructuredChat({ client, model: llm.model, ...(observer ? { observer } : {}) });
  return { embedder: createEmbedder(llm, client, observer, embedder), extractor: new LlmExtractor(chat), resolver: new LlmResolver(chat) };
}
