import type OpenAI from 'openai';
import type { Config } from '../config.js';
import { LexicalEmbedder } from './lexical-embedder.js';
import { OpenAIEmbedder, createOpenAIClient } from './openai-embedder.js';
import type { Embedder, ModelCallObserver } from './types.js';

/**
 * The configured embedder: the OpenAI-compatible endpoint when one is set, else the offline
 * lexical one. `client` lets the caller share one OpenAI client between chat and embeddings.
 */
export function createEmbedder(llm: Config['llm'], client?: OpenAI, observer?: ModelCallObserver): Embedder {
  if (llm.remote) {
    return new OpenAIEmbedder({
      client: client ?? createOpenAIClient(llm),
      model: llm.embeddingModel,
      dimensions: llm.embeddingDimensions,
      ...(observer ? { observer } : {}),
    });
  }
  return new LexicalEmbedder(llm.embeddingDimensions);
}
