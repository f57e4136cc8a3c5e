import type { Hono } from 'hono';
import { stream } from 'hono/streaming';
import { SCOPES } from '../auth/principal.js';
import type { AppEnv } from '../http/env.js';
import { readQuery } from '../http/input.js';
import { scope } from '../http/middleware.js';
import { DomainError } from '../shared/errors.js';
import type { Services } from '../shared/context.js';
import { exportMemories, exportQuery, importMemories, importQuery } from './service.js';

export const IMPORT_PATH = '/memories/import';
const NDJSON_TYPES = new Set(['application/x-ndjson', 'application/ndjson', 'application/jsonl', 'application/json-lines']);

/** The body's lines, decoded as strict UTF-8 while it streams in (never the whole body at once). */
async function* linesOf(body: ReadableStream<Uint8Array> | null): AsyncGenerator<string> {
  if (!body) return;
  const decoder = new TextDecoder('utf-8', { fatal: true });
  let pending = '';
  const reader = body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      let text: string;
      try {
        text = done ? decoder.decode() : decoder.decode(value, { stream: true });
      } catch {
        throw new DomainError('malformed_json', 'the body is not valid UTF-8');
      }
      pending += text;
      // Walk the buffer by position and cut once: re-slicing per line would copy a large chunk
      // once per line it holds.
      let start = 0;
      let newline: number;
      while ((newline = pending.indexOf('\n', start)) >= 0) {
        yield pending.slice(start, newline).replace(/\r$/, '');
        start = newline + 1;
      }
      pending = pending.slice(start);
      if (done) break;
    }
    if (pending !== '') yield pending;
  } finally {
    reader.releaseLock();
  }
}

/** Registered before the memory routes, so /memories/export is not taken for a memory id. */
export function registerPortabilityRoutes(app: Hono<AppEnv>, services: Services): void {
  app.get('/memories/export', scope(SCOPES.read), async (c) => {
    const query = readQuery(c, exportQuery);
    const rows = exportMemories({ services, principal: c.get('principal') }, query);
    // The first page is read before answering, so a refusal (scope, user) is still a problem+json.
    const first = await rows.next();
    c.header('content-type', 'application/x-ndjson');
    return stream(c, async (out) => {
      if (first.done) return;
      await out.write(`${JSON.stringify(first.value)}\n`);
      // write() resolves once the client has taken the bytes: a slow reader slows the reading.
      for await (const memory of rows) await out.write(`${JSON.stringify(memory)}\n`);
    }, async (error) => {
      services.logger.warn({ err: error.name }, 'export stream failed');
    });
  });

  app.post(IMPORT_PATH, scope(SCOPES.write), async (c) => {
    const contentType = (c.req.header('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
    if (!NDJSON_TYPES.has(contentType)) throw new DomainError('unsupported_media_type', 'the body must be application/x-ndjson (one exported Memory a line)');
    const query = readQuery(c, importQuery);
    return c.json(await importMemories({ services, principal: c.get('principal') }, query.user_id, linesOf(c.req.raw.body)));
  });
}
