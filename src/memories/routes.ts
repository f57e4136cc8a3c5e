import { SCOPES } from '../auth/principal.js';
import * as erasure from '../erasure/service.js';
import type { AppEnv } from '../http/env.js';
import { defineRoute, jsonBody, jsonResponse, ERRORS, X_REQUEST_ID, type Router } from '../http/routing.js';
import type { Services } from '../shared/context.js';
import {
  EXAMPLE_MEMORY,
  addMemoriesBody,
  deleteMemoriesBody,
  erasureReceipt,
  listMemoriesQuery,
  memoryHistory,
  memoryIdParams,
  memoryList,
  memoryPage,
  memorySchema,
  patchMemoryBody,
} from './schemas.js';
import * as memories from './service.js';


export const addMemories = defineRoute({
  method: 'post',
  path: '/memories',
  operationId: 'addMemories',
  tags: ['memories'],
  summary: 'Store memories as given (no LLM)',
  actAs: true,
  description: `Stores each entry exactly as given — no extraction, no reconciliation — and records one
\`ADD\` history event per stored memory. Defaults: \`importance\` 5, \`occurred_at\` the time of
the request, \`category\` null, \`metadata\` \`{}\`, \`expires_at\` null.

The answer lists one memory per input entry, **in input order**, each a new row with its own
\`ADD\` event. A user never holds two *current* memories of the same fact (same content after
normalising case, whitespace and trailing punctuation): an entry that repeats a current
memory supersedes it — the old row keeps its history, gets \`valid_to\` and a \`SUPERSEDE\`
event — so the newest importance, category, metadata, agent and run win; within one request
a later equal entry supersedes an earlier one the same way (the earlier answers with
\`valid_to\` set).

Retention: \`expires_at\` (or \`ttl_days\` from now) sets when the memory expires; without
either, the tenant's settings decide (its category's days, else \`default_ttl_days\`; null
keeps it). Once past, the memory is left out of recall, list and get at once and erased with
its history within an hour. Under the tenant's \`pii.mode\`, personal data in \`content\` and
\`metadata\` is redacted before anything is stored (\`redact\`), or the request is a 422 naming
the kind (\`reject\`).`,
  scope: SCOPES.write,
  request: {
    body: jsonBody(addMemoriesBody, {
      memories: [{ content: 'Alice is allergic to peanuts', importance: 9, category: 'health', metadata: { source: 'onboarding' } }, { content: 'Alice works as a nurse' }],
    }),
  },
  responses: {
    201: jsonResponse(memoryList, 'The memories, one per input entry, in input order.', {
      memories: [EXAMPLE_MEMORY, { ...EXAMPLE_MEMORY, id: '7a2b9c1d-0e3f-4a5b-8c6d-1e2f3a4b5c6d', content: 'Alice works as a nurse', importance: 5, category: null, metadata: {} }],
    }),
    409: ERRORS[409],
    422: ERRORS[422],
  },
});

export const listMemories = defineRoute({
  method: 'get',
  path: '/memories',
  operationId: 'listMemories',
  tags: ['memories'],
  summary: "List a user's memories, newest first",
  actAs: true,
  description: `Ordered by \`created_at\` descending, then \`id\` ascending. Pagination is keyset-based: pass
\`next_cursor\` back as \`cursor\` for the next page; pages neither skip nor repeat memories
even while new ones are added. \`next_cursor\` is opaque and is \`null\` on the last page. A
cursor this service did not issue is a 400.

Superseded memories (\`valid_to\` set) are left out unless \`include_superseded=true\`.
Expired memories (past \`expires_at\`) are never listed. Unknown query parameters are a 400.`,
  scope: SCOPES.read,
  request: { query: listMemoriesQuery },
  responses: { 200: jsonResponse(memoryPage, 'One page of memories.', { memories: [EXAMPLE_MEMORY], next_cursor: null }) },
});

export const getMemory = defineRoute({
  method: 'get',
  path: '/memories/{id}',
  operationId: 'getMemory',
  tags: ['memories'],
  summary: 'One memory',
  description: `Any memory of the user, superseded ones included; an expired one (past \`expires_at\`) is a
404, as are its history and a PATCH of it. Another tenant's memory, or another user's without
\`memories:act_as\`, is a 404.`,
  scope: SCOPES.read,
  request: { params: memoryIdParams },
  responses: { 200: jsonResponse(memorySchema, 'The memory.', EXAMPLE_MEMORY) },
});

export const updateMemory = defineRoute({
  method: 'patch',
  path: '/memories/{id}',
  operationId: 'updateMemory',
  tags: ['memories'],
  summary: 'Edit a memory in place',
  description: `Changes the given fields in place (no supersession), sets \`updated_at\`, re-embeds the
memory when \`content\` changes, and records an \`UPDATE\` history event with the old and new
content. \`category: null\` clears the category; \`metadata\` replaces the whole object. At
least one field is required. Changing \`content\` to a fact the user already holds as
another current memory is a 409. Another tenant's memory, or another user's without
\`memories:act_as\`, is a 404. \`expires_at\` (\`null\`: never) or \`ttl_days\` (from now) sets a
new expiry. Under the tenant's \`pii.mode\`, personal data is redacted (\`redact\`) or the
request is a 422 naming the kind (\`reject\`).`,
  scope: SCOPES.write,
  request: { params: memoryIdParams, body: jsonBody(patchMemoryBody, { importance: 10, metadata: { source: 'onboarding', confirmed: true } }) },
  responses: {
    200: jsonResponse(memorySchema, 'The memory as it now is.', { ...EXAMPLE_MEMORY, importance: 10, metadata: { source: 'onboarding', confirmed: true }, updated_at: '2026-02-01T09:30:00.000Z' }),
    409: ERRORS[409],
    422: ERRORS[422],
  },
});

export const deleteMemory = defineRoute({
  method: 'delete',
  path: '/memories/{id}',
  operationId: 'deleteMemory',
  tags: ['erasure'],
  summary: 'Forget one memory',
  description: `Deletes the memory and its history and writes an erasure receipt (scope \`memories\`).
Another tenant's memory, another user's without \`memories:act_as\`, or one already deleted
is a 404.`,
  scope: SCOPES.delete,
  request: { params: memoryIdParams },
  responses: { 204: { description: 'Deleted.', headers: X_REQUEST_ID } },
});

export const getMemoryHistory = defineRoute({
  method: 'get',
  path: '/memories/{id}/history',
  operationId: 'getMemoryHistory',
  tags: ['memories'],
  summary: 'What happened to a memory, oldest first',
  description: `Events in the order they happened (\`created_at\` ascending): \`ADD\` when it was stored,
\`UPDATE\` for each edit (PATCH, or an extraction job merging a fact into it), \`SUPERSEDE\`
when a newer fact replaced it, \`DELETE\` when an extraction job retracted it. \`job_id\` names
the extraction job behind the event, if any; \`actor\` is \`user:<sub>\` for a request made
with a token that has a subject, \`service\` for one without, and \`job:<job_id>\` for changes
an extraction job made; once the acting user is erased it reads \`erased:<erasure_id>\`.
Deleting a memory deletes its history.`,
  scope: SCOPES.read,
  request: { params: memoryIdParams },
  responses: {
    200: jsonResponse(memoryHistory, "The memory's history.", {
      events: [
        { event: 'ADD', old_content: null, new_content: 'Alice is allergic to peanuts', job_id: null, actor: 'user:alice', created_at: '2026-01-31T12:00:00.000Z' },
        { event: 'UPDATE', old_content: 'Alice is allergic to peanuts', new_content: 'Alice is severely allergic to peanuts', job_id: null, actor: 'user:alice', created_at: '2026-02-01T09:30:00.000Z' },
      ],
    }),
  },
});

export const deleteMemories = defineRoute({
  method: 'post',
  path: '/memories/delete',
  operationId: 'deleteMemories',
  tags: ['erasure'],
  summary: 'Forget listed memories, or everything held about a user',
  actAs: true,
  description: `- With \`memory_ids\`: deletes those of the listed memories that belong to the user, with
  their history. Ids that are not the user's (another user's, another tenant's, unknown)
  are ignored and not counted; a repeated id counts once.
- Without \`memory_ids\`: erases everything held about the user — every memory (current and
  superseded), its history, the user's extraction jobs and their transcripts — in one
  transaction, and drops the user's queued jobs.

\`deleted\` is the number of memories deleted. Every delete writes an erasure receipt and
answers its \`erasure_id\`; the receipt keeps only a keyed hash of tenant and user, the scope
(\`memories\` or \`user\`) and the counts, never the content or who the user was.`,
  scope: SCOPES.delete,
  request: { body: jsonBody(deleteMemoriesBody, { memory_ids: ['3f1c2a4e-8b7d-4c6e-9a1f-2b3c4d5e6f70'] }) },
  responses: { 200: jsonResponse(erasureReceipt, "What was deleted, and the receipt's id.", { deleted: 1, erasure_id: 'c0ffee00-1234-4abc-8def-0123456789ab' }) },
});

export const memoryRoutes = [addMemories, listMemories, deleteMemories, getMemory, updateMemory, deleteMemory, getMemoryHistory];

export function registerMemoryRoutes(app: Router, services: Services): void {
  const ctx = (principal: AppEnv['Variables']['principal']) => ({ services, principal });

  app.openapi(addMemories, async (c) => c.json({ memories: await memories.addMemories(ctx(c.get('principal')), c.req.valid('json')) }, 201));
  app.openapi(listMemories, async (c) => c.json(await memories.listMemories(ctx(c.get('principal')), c.req.valid('query')), 200));
  app.openapi(deleteMemories, async (c) => c.json(await erasure.deleteMemories(ctx(c.get('principal')), c.req.valid('json')), 200));
  app.openapi(getMemory, async (c) => c.json(await memories.getMemory(ctx(c.get('principal')), c.req.valid('param').id), 200));
  app.openapi(updateMemory, async (c) => c.json(await memories.patchMemory(ctx(c.get('principal')), c.req.valid('param').id, c.req.valid('json')), 200));
  app.openapi(deleteMemory, async (c) => {
    await erasure.deleteMemory(ctx(c.get('principal')), c.req.valid('param').id);
    return c.body(null, 204);
  });
  app.openapi(getMemoryHistory, async (c) => c.json(await memories.getHistory(ctx(c.get('principal')), c.req.valid('param').id), 200));
}
