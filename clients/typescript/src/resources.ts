import type { RequestOptions, Transport } from './core.js';
import type {
  ErasureReceipt,
  Job,
  Memory,
  MemoryAddParams,
  MemoryAddResponse,
  MemoryEraseParams,
  MemoryExtractParams,
  MemoryExtractResponse,
  MemoryHistory,
  MemoryListParams,
  MemoryPage,
  MemoryRecallParams,
  MemoryRecallResponse,
  MemoryUpdateParams,
} from './types.js';

const memoryPath = (id: string) => `/memories/${encodeURIComponent(id)}`;

export interface ExtractOptions extends RequestOptions {
  /** Makes the call safe to repeat; one is generated when absent, so the client's own retries never queue a second job. */
  idempotencyKey?: string | undefined;
}

export interface WaitOptions extends RequestOptions {
  /** How long to wait for the job to finish (default 30 000 ms). */
  timeoutMs?: number | undefined;
  /** Pause between polls (default 250 ms, growing to 2 s). */
  pollIntervalMs?: number | undefined;
}

/**
 * What `memories.list()` returns: awaited, the first page (`{memories, next_cursor}`); iterated
 * with `for await`, every memory of every page, fetching the next page as needed.
 */
export class MemoryPagePromise implements PromiseLike<MemoryPage>, AsyncIterable<Memory> {
  private first: Promise<MemoryPage> | undefined;

  constructor(private readonly fetchPage: (cursor: string | undefined) => Promise<MemoryPage>, private readonly cursor: string | undefined) {}

  private firstPage(): Promise<MemoryPage> {
    return (this.first ??= this.fetchPage(this.cursor));
  }

  then<A = MemoryPage, B = never>(onfulfilled?: ((page: MemoryPage) => A | PromiseLike<A>) | null, onrejected?: ((reason: unknown) => B | PromiseLike<B>) | null): Promise<A | B> {
    return this.firstPage().then(onfulfilled, onrejected);
  }

  catch<B = never>(onrejected?: ((reason: unknown) => B | PromiseLike<B>) | null): Promise<MemoryPage | B> {
    return this.firstPage().catch(onrejected);
  }

  finally(onfinally?: (() => void) | null): Promise<MemoryPage> {
    return this.firstPage().finally(onfinally);
  }

  /** Every page in turn, from the first. */
  async *pages(): AsyncGenerator<MemoryPage> {
    let page = await this.firstPage();
    yield page;
    while (page.next_cursor) {
      page = await this.fetchPage(page.next_cursor);
      yield page;
    }
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Memory> {
    for await (const page of this.pages()) yield* page.memories;
  }
}

export class Memories {
  constructor(private readonly transport: Transport) {}

  /** Stores memories as given (no model involved); answers them in the order sent. */
  add(body: MemoryAddParams, options?: RequestOptions): Promise<MemoryAddResponse> {
    return this.transport.request({ ...options, method: 'POST', path: '/memories', body });
  }

  /** The memories that matter for a query, best first, each with its score and its components. */
  recall(body: MemoryRecallParams, options?: RequestOptions): Promise<MemoryRecallResponse> {
    return this.transport.request({ ...options, method: 'POST', path: '/memories/recall', body });
  }

  /** Queues extraction over a conversation; wait for it with `jobs.wait(job_id)`. */
  extract(body: MemoryExtractParams, options: ExtractOptions = {}): Promise<MemoryExtractResponse> {
    const { idempotencyKey = globalThis.crypto.randomUUID(), ...rest } = options;
    return this.transport.request({
      ...rest,
      method: 'POST',
      path: '/memories/extract',
      body,
      headers: { ...rest.headers, 'idempotency-key': idempotencyKey },
    });
  }

  /** One page of memories, newest first; `for await` over the result walks every page. */
  list(query: MemoryListParams = {}, options?: RequestOptions): MemoryPagePromise {
    const { cursor, ...rest } = query;
    return new MemoryPagePromise(
      (next) => this.transport.request<MemoryPage>({ ...options, method: 'GET', path: '/memories', query: { ...rest, cursor: next } }),
      cursor,
    );
  }

  get(id: string, options?: RequestOptions): Promise<Memory> {
    return this.transport.request({ ...options, method: 'GET', path: memoryPath(id) });
  }

  update(id: string, body: MemoryUpdateParams, options?: RequestOptions): Promise<Memory> {
    return this.transport.request({ ...options, method: 'PATCH', path: memoryPath(id), body });
  }

  delete(id: string, options?: RequestOptions): Promise<void> {
    return this.transport.request({ ...options, method: 'DELETE', path: memoryPath(id) });
  }

  history(id: string, options?: RequestOptions): Promise<MemoryHistory> {
    return this.transport.request({ ...options, method: 'GET', path: `${memoryPath(id)}/history` });
  }

  /** Deletes the listed memories, or without `memory_ids` everything held about the user; answers a receipt. */
  erase(body: MemoryEraseParams = {}, options?: RequestOptions): Promise<ErasureReceipt> {
    return this.transport.request({ ...options, method: 'POST', path: '/memories/delete', body });
  }
}

export class Jobs {
  constructor(private readonly transport: Transport) {}

  get(id: string, options?: RequestOptions): Promise<Job> {
    return this.transport.request({ ...options, method: 'GET', path: `/jobs/${encodeURIComponent(id)}` });
  }

  /**
   * Polls the job until it has succeeded or failed, and answers it. After `timeoutMs` it answers
   * the job as it then is (`queued` or `running`), so check `status`; it never throws for a slow job.
   */
  async wait(id: string, options: WaitOptions = {}): Promise<Job> {
    const { timeoutMs = 30_000, pollIntervalMs = 250, ...rest } = options;
    const deadline = Date.now() + timeoutMs;
    let interval = pollIntervalMs;
    for (;;) {
      const job = await this.get(id, rest);
      const left = deadline - Date.now();
      if (job.status === 'succeeded' || job.status === 'failed' || left <= 0) return job;
      await new Promise((resolve) => setTimeout(resolve, Math.min(interval, left)));
      interval = Math.min(2000, interval * 1.5);
    }
  }
}
