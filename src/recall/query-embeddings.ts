import type { Embedder } from '../llm/types.js';
import { RecentMap } from '../shared/recent-map.js';

/**
 * How many recent queries' vectors each embedder keeps (a 1,536-dimension vector is ~12 KiB, so
 * this holds a few MiB at most). Agents ask the same few questions again and again ("what does
 * the user like?"); a repeated query is then answered without a call to the embedding provider.
 */
export const QUERY_EMBEDDING_CACHE_SIZE = 256;

const caches = new WeakMap<Embedder, RecentMap<string, Promise<number[]>>>();

/**
 * The query's vector, from the embedder or from its most recently used ones. The promise is kept,
 * so concurrent recalls of one query share one call; a failed call is forgotten at once, so an
 * outage is never remembered. Keyed by the embedder instance: a service re-embedding with another
 * embedder (or dimensions) never sees this one's vectors. And by tenant: a hit answers faster, so
 * a shared entry would let one tenant time whether another recently asked a given question.
 * Callers must not change the vector.
 */
export function embedQuery(embedder: Embedder, tenantId: string, query: string): Promise<number[]> {
  let cache = caches.get(embedder);
  if (!cache) caches.set(embedder, (cache = new RecentMap(QUERY_EMBEDDING_CACHE_SIZE)));
  const text = `${tenantId}\u0000${query}`;
  const known = cache.get(text);
  if (known) return known;
  const embedding = embedder.embed([query]).then(([vector]) => vector!);
  cache.set(text, embedding);
  embedding.catch(() => {
    if (cache.peek(text) === embedding) cache.delete(text);
  });
  return embedding;
}
