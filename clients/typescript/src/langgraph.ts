/**
 * A LangGraph.js `BaseStore` over Engram. A namespace is `[user_id, ...path]`: its first element is
 * the Engram user the item belongs to (so erasing the user erases the items), the rest is a path
 * kept, with the key and the value, in the memory's `metadata.langgraph`. The value's `content`
 * (else the value as JSON) is the memory's text, which recall searches. Needs the optional peer
 * `@langchain/langgraph-checkpoint`.
 */
import {
  BaseStore,
  InvalidNamespaceError,
  type GetOperation,
  type Item,
  type ListNamespacesOperation,
  type MatchCondition,
  type Operation,
  type OperationResults,
  type PutOperation,
  type SearchItem,
  type SearchOperation,
} from '@langchain/langgraph-checkpoint';
import type { Engram, Memory } from './index.js';

export interface EngramStoreOptions {
  client: Engram;
  /** Recorded as `agent_id` on every item the store writes, and searches are limited to it. */
  agentId?: string | undefined;
  /** The most memories a search without `query`, or `listNamespaces`, reads per user (default 10 000). */
  maxScan?: number | undefined;
}

/** What the store keeps in a memory's metadata under `langgraph`. */
interface StoredItem {
  namespace: string[];
  /** The namespace path as JSON text, so finding an item is one exact metadata match. */
  path: string;
  /** Every prefix of the path as JSON text, so a prefix search is a metadata containment. */
  prefixes: string[];
  key: string;
  value: Record<string, unknown>;
}

type Metadata = Record<string, unknown>;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export class EngramStore extends BaseStore {
  private readonly client: Engram;
  private readonly agentId: string | undefined;
  private readonly maxScan: number;

  constructor(options: EngramStoreOptions) {
    super();
    this.client = options.client;
    this.agentId = options.agentId;
    this.maxScan = options.maxScan ?? 10_000;
  }

  /** Runs the operations in order (a put is seen by the operations after it). */
  async batch<Op extends Operation[]>(operations: Op): Promise<OperationResults<Op>> {
    const results: unknown[] = [];
    for (const op of operations) {
      if ('value' in op) results.push(await this.putOp(op));
      else if ('namespacePrefix' in op) results.push(await this.searchOp(op));
      else if ('key' in op) results.push(await this.getOp(op));
      else results.push(await this.listNamespacesOp(op));
    }
    return results as OperationResults<Op>;
  }

  private async getOp({ namespace, key }: GetOperation): Promise<Item | null> {
    const memory = await this.find(namespace, key);
    return memory ? toItem(memory) : null;
  }

  private async putOp({ namespace, key, value }: PutOperation): Promise<void> {
    const user = userOf(namespace);
    const existing = await this.find(namespace, key);
    if (value === null) {
      if (existing) await this.client.memories.delete(existing.id);
      return;
    }
    const path = namespace.slice(1);
    const stored: StoredItem = { namespace: path, path: JSON.stringify(path), prefixes: prefixesOf(path), key, value };
    const fields = { content: contentOf(value), metadata: { langgraph: stored } };
    if (existing) {
      await this.client.memories.update(existing.id, fields);
      return;
    }
    await this.client.memories.add({ user_id: user, ...(this.agentId ? { agent_id: this.agentId } : {}), memories: [fields] });
  }

  private async searchOp({ namespacePrefix, filter, limit = 10, offset = 0, query }: SearchOperation): Promise<SearchItem[]> {
    const user = userOf(namespacePrefix);
    const path = namespacePrefix.slice(1);
    const langgraph: Metadata = {};
    if (path.length > 0) langgraph.prefixes = [JSON.stringify(path)];
    if (filter && Object.keys(filter).length > 0) langgraph.value = plainFilter(filter);
    const metadata = Object.keys(langgraph).length > 0 ? { langgraph } : undefined;
    if (query !== undefined && query.trim() !== '') {
      const { memories } = await this.client.memories.recall({
        user_id: user,
        query,
        limit: Math.min(100, offset + limit),
        // A store search ranks what is in scope, as LangGraph's stores do, with no relevance floor.
        min_relevance: 0,
        filters: { ...(this.agentId ? { agent_id: this.agentId } : {}), ...(metadata ? { metadata } : {}) },
      });
      return memories.slice(offset, offset + limit).map((m) => ({ ...toItem(m), score: m.score }));
    }
    // Without a query there is nothing to rank by: newest first, as the list answers them.
    const items: SearchItem[] = [];
    let seen = 0;
    for await (const memory of this.scan(user)) {
      if (metadata && !contains(memory.metadata, metadata)) continue;
      if (seen++ < offset) continue;
      items.push(toItem(memory));
      if (items.length >= limit) break;
    }
    return items;
  }

  private async listNamespacesOp({ matchConditions = [], maxDepth, limit, offset }: ListNamespacesOperation): Promise<string[][]> {
    const prefix = matchConditions.find((c) => c.matchType === 'prefix');
    if (!prefix || prefix.path.length === 0 || prefix.path[0] === '*') {
      throw new InvalidNamespaceError('EngramStore lists one user at a time: pass prefix [user_id, ...]');
    }
    const user = prefix.path[0] as string;
    const found = new Map<string, string[]>();
    for await (const memory of this.scan(user)) {
      const namespace = [user, ...(storedOf(memory)?.namespace ?? [])];
      if (!matchConditions.every((c) => matches(namespace, c))) continue;
      const cut = maxDepth === undefined ? namespace : namespace.slice(0, maxDepth);
      found.set(JSON.stringify(cut), cut);
    }
    return [...found.values()].sort((a, b) => a.join('\u0000').localeCompare(b.join('\u0000'))).slice(offset, offset + limit);
  }

  /** The memory holding an item: a store item by its path and key, or (directly under the user) any memory by its id. */
  private async find(namespace: string[], key: string): Promise<Memory | undefined> {
    const user = userOf(namespace);
    const path = namespace.slice(1);
    const { memories } = await this.client.memories.recall({
      user_id: user,
      query: key,
      limit: 1,
      min_relevance: 0,
      filters: { ...(this.agentId ? { agent_id: this.agentId } : {}), metadata: { langgraph: { path: JSON.stringify(path), key } } },
    });
    if (memories[0]) return memories[0];
    if (path.length > 0 || !UUID.test(key)) return undefined;
    try {
      const memory = await this.client.memories.get(key);
      return memory.user_id === user && !storedOf(memory) ? memory : undefined;
    } catch (error) {
      if ((error as { status?: number }).status === 404) return undefined;
      throw error;
    }
  }

  private async *scan(user: string): AsyncGenerator<Memory> {
    let count = 0;
    for await (const memory of this.client.memories.list({ user_id: user, limit: 100 })) {
      if (count++ >= this.maxScan) return;
      if (this.agentId === undefined || memory.agent_id === this.agentId) yield memory;
    }
  }
}

function userOf(namespace: string[]): string {
  const user = namespace[0];
  if (user === undefined || user === '' || user === '*') throw new InvalidNamespaceError('EngramStore namespaces start with the user id: [user_id, ...path]');
  return user;
}

function prefixesOf(path: string[]): string[] {
  return path.map((_, i) => JSON.stringify(path.slice(0, i + 1)));
}

function contentOf(value: Record<string, unknown>): string {
  return typeof value.content === 'string' && value.content.trim() !== '' ? value.content : JSON.stringify(value);
}

function storedOf(memory: Memory): StoredItem | undefined {
  const stored = (memory.metadata as Metadata).langgraph as StoredItem | undefined;
  return stored && typeof stored === 'object' && typeof stored.key === 'string' ? stored : undefined;
}

/** A store item, or a memory the store did not write (extracted or added directly) under `[user_id]` by its id. */
function toItem(memory: Memory): Item {
  const stored = storedOf(memory);
  return {
    namespace: [memory.user_id, ...(stored?.namespace ?? [])],
    key: stored?.key ?? memory.id,
    value: stored?.value ?? { content: memory.content, importance: memory.importance, category: memory.category, occurred_at: memory.occurred_at },
    createdAt: new Date(memory.created_at),
    updatedAt: new Date(memory.updated_at),
  };
}

/** Filters are equality on the value's fields (nested objects contained); operators like `$gt` are not supported. */
function plainFilter(filter: Record<string, unknown>): Record<string, unknown> {
  for (const key of Object.keys(filter)) {
    if (key.startsWith('$') || (isObject(filter[key]) && Object.keys(filter[key]).some((k) => k.startsWith('$')))) {
      throw new Error(`EngramStore filters match values by equality; the operator in "${key}" is not supported`);
    }
  }
  return filter;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** PostgreSQL's jsonb `@>` (what the service's metadata filter does), for the pages read without a query. */
function contains(haystack: unknown, needle: unknown): boolean {
  if (Array.isArray(needle)) return Array.isArray(haystack) && needle.every((n) => haystack.some((h) => contains(h, n)));
  if (isObject(needle)) return isObject(haystack) && Object.entries(needle).every(([k, v]) => k in haystack && contains(haystack[k], v));
  return haystack === needle;
}

function matches(namespace: string[], condition: MatchCondition): boolean {
  const { path, matchType } = condition;
  if (path.length > namespace.length) return false;
  const part = matchType === 'prefix' ? namespace.slice(0, path.length) : namespace.slice(namespace.length - path.length);
  return path.every((p, i) => p === '*' || p === part[i]);
}
