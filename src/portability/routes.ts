import { stream } from 'hono/streaming';
import { z } from 'zod';
import { SCOPES } from '../auth/principal.js';
import { memorySchema, EXAMPLE_MEMORY } from '../memories/schemas.js';
import { defineRoute, jsonResponse, X_REQUEST_ID, type Router } from '../http/routing.js';
import { DomainError } from '../shared/errors.js';
import type { Services } from '../shared/context.js';
import { exportMemories, exportQuery, importMemories, importQuery, importResult } from './service.js';

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

const exportedMemory = memorySchema.extend({
  events: z
    .array(
      z.strictObject({
        event: z.enum(['ADD', 'UPDATE', 'SUPERSEDE', 'DELETE']),
        old_content: z.string().nullable(),
        new_content: z.string().nullable(),
        job_id: z.uuid().nullable(),
        actor: z.string(),
        created_at: z.string().meta({ format: 'date-time' }),
      }),
    )
    .optional()
    .meta({ description: "The memory's history, oldest first (with `include_history=true`)." }),
}).meta({ id: 'ExportedMemory', description: 'One line of an export: a Memory, with its history when asked.' });

export const exportRoute = defineRoute({
  method: 'get',
  path: '/memories/export',
  operationId: 'exportMemories',
  tags: ['portability'],
  summary: "Export a user's memories as NDJSON",
  actAs: true,
  description: `Streams one \`Memory\` a line (\`application/x-ndjson\`), the latest \`occurred_at\` first;
superseded and expired ones with \`include_superseded=true\`, each with its \`events\` (history)
with \`include_history=true\`. The rows are read a page at a time as the client takes them, so
an export of any size holds little memory. The lines are what \`POST /memories/import\` takes.`,
  scope: SCOPES.read,
  request: { query: exportQuery },
  responses: {
    200: {
      description: 'The memories, one JSON object a line.',
      headers: X_REQUEST_ID,
      content: { 'application/x-ndjson': { schema: exportedMemory, example: EXAMPLE_MEMORY } },
    },
  },
});

export const importRoute = defineRoute({
  method: 'post',
  path: IMPORT_PATH,
  operationId: 'importMemories',
  tags: ['portability'],
  summary: 'Import memories from NDJSON',
  actAs: true,
  description: `Takes the lines of an export (\`application/x-ndjson\`, up to \`MAX_IMPORT_BYTES\`, default 100 MiB)
into the user named by the token (or \`user_id\`): the file's ids, user, \`created_at\` and history
are not imported. Each line is validated on its own: a bad one is reported in \`errors\` with its
number (1-based) and the others go on. Content is embedded again with this service's embedder,
in batches. A line the user already holds (the same content; for a superseded one, also the same
\`valid_to\`) is skipped, so importing a file twice stores nothing the second time. Kept: content,
importance, category, metadata, \`agent_id\`, \`run_id\`, \`occurred_at\` (the time of the import when a
line has none), \`valid_to\` (not before \`occurred_at\`), \`expires_at\`. A field that is neither kept
nor one of an export's (\`id\`, \`user_id\`, \`created_at\`, \`updated_at\`, \`events\`) makes the line an
error, so nothing a file asks for is silently dropped.`,
  scope: SCOPES.write,
  request: {
    query: importQuery,
    body: {
      required: true,
      description: 'One exported Memory a line.',
      content: { 'application/x-ndjson': { schema: exportedMemory, example: EXAMPLE_MEMORY } },
    },
  },
  responses: {
    200: jsonResponse(importResult, 'What was imported, skipped as already held, and refused.', {
      imported: 41,
      skipped: 0,
      errors: [{ line: 7, message: '/importance: Too big: expected number to be <=10' }],
    }),
    413: { $ref: '#/components/responses/PayloadTooLarge' },
    415: { $ref: '#/components/responses/UnsupportedMediaType' },
  },
});

export const portabilityRoutes = [exportRoute, importRoute];

/** Registered before the memory routes, so /memories/export is not taken for a memory id. */
export function registerPortabilityRoutes(app: Router, services: Services): void {
  app.openapi(exportRoute, async (c) => {
    const rows = exportMemories({ services, principal: c.get('principal') }, c.req.valid('query'));
    // The first page is read before answering, so a refusal (scope, user) is still a problem+json.
    const first = await rows.next();
    c.header('content-type', 'application/x-ndjson');
    // A streamed body has no typed form in the route's response map (its schema is one line's).
    return stream(
      c,
      async (out) => {
        if (first.done) return;
        // One write a page; write() resolves once the client has taken the bytes, so a slow
        // reader slows the reading of the next page.
        await out.write(first.value);
        for await (const page of rows) await out.write(page);
      },
      async (error) => {
        services.logger.warn({ err: error.name }, 'export stream failed');
      },
    ) as never;
  });

  app.openapi(importRoute, async (c) => {
    const contentType = (c.req.header('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
    if (!NDJSON_TYPES.has(contentType)) throw new DomainError('unsupported_media_type', 'the body must be application/x-ndjson (one exported Memory a line)');
    const query = c.req.valid('query');
    return c.json(await importMemories({ services, principal: c.get('principal') }, query.user_id, linesOf(c.req.raw.body)), 200);
  });
}
