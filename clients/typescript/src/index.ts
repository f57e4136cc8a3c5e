import { Transport, type ClientOptions } from './core.js';
import { Jobs, Memories } from './resources.js';

export { EngramError } from './error.js';
export type { ClientOptions, RequestOptions, TokenSource } from './core.js';
export { MemoryPagePromise, type ExtractOptions, type WaitOptions } from './resources.js';
export type * from './types.js';

/**
 * The Engram API. `new Engram({ baseURL, token })`, then `engram.memories.*` and `engram.jobs.*`;
 * bodies and answers use the service's own (snake_case) field names.
 */
export class Engram {
  readonly memories: Memories;
  readonly jobs: Jobs;
  readonly baseURL: string;

  constructor(options: ClientOptions = {}) {
    const transport = new Transport(options);
    this.baseURL = transport.baseURL;
    this.memories = new Memories(transport);
    this.jobs = new Jobs(transport);
  }
}

export default Engram;
