import { SCOPES } from '../auth/principal.js';
import { defineRoute, jsonBody, jsonResponse, type Router } from '../http/routing.js';
import { EXAMPLE_MEMORY } from '../memories/schemas.js';
import type { Services } from '../shared/context.js';
import { recallBody, recallResult } from './schemas.js';
import { recall } from './service.js';


export const recallMemories = defineRoute({
  method: 'post',
  path: '/memories/recall',
  operationId: 'recallMemories',
  tags: ['recall'],
  summary: 'The memories that matter for a query, best first',
  actAs: true,
  description: `Candidates come from two arms over the user's memories in scope (the filters below, and
validity at now or \`as_of\`): the full-text arm scores every memory sharing a word with the
query by BM25 over PostgreSQL's \`english\` lexemes (statistics of the memories in scope;
irregular forms such as "met"/"meet" count as one word) and contributes its best 100; the
vector arm contributes the 100 memories nearest the query by cosine similarity of the
embeddings, whatever their words. The pool does not depend on \`limit\`, so a smaller \`limit\`
returns the first memories of a larger one. A memory neither arm brings is not ranked,
however important or recent; a user with at most 100 memories in scope has all of them
ranked. The work is bounded: only the query's first 32 distinct lexemes rank. A scope of
at most 1,000 memories is scanned whole; a larger one is answered over all of it through
indexes: the text arm reads, for each set of the query's words (each word held by at most
1,000 of the user's memories, all of them, all but one, all but two), the 300 newest
memories holding it, with BM25's statistics from all of the user's current memories; the
vector arm compares every memory's quantized embedding and re-ranks the nearest 400 by
cosine (with the offline lexical embedder, whose vectors are its words' features, only when
a filter is set or the text arm brings fewer than 100). Each candidate
gets three components, each already in [0, 1]:

- \`recency\` = 2^(−age / half-life), age measured from \`occurred_at\` to now (a future
  \`occurred_at\` counts as now); the half-life is \`recency_half_life_hours\`, else the
  service's \`RECALL_HALF_LIFE_HOURS\` (default 720);
- \`importance\` = (importance − 1) / 9;
- \`relevance\` = 0.8 × BM25 / the best BM25 among the memories in scope for this query +
  0.2 × max(0, cosine similarity). It is relative to the request: when any memory shares a
  word with the query, the best match gets at least 0.8 even when the query is off-topic,
  so \`min_score\` cannot say "nothing is relevant"; a memory sharing no word with the query
  gets at most 0.2 (its cosine part).

**The relevance floor.** \`min_relevance\` (0–1; default the service's
\`RECALL_MIN_RELEVANCE\`, else the embedder's: 0.17, or 0.26 with the local model) leaves out, before weighting, every memory whose *absolute*
relevance is below it, however recent or important: the same fusion with BM25 divided by
the larger of the request's best BM25 and the query's full BM25 (the sum of its words'
idf, a word no memory holds counting at document frequency 0: what a memory holding each
word once would score). A floor on the relative \`relevance\` could never leave out the best
match of an off-topic query; the absolute one says how much of the query a memory matches.
It is never above \`scores.relevance\`, so every memory returned has \`scores.relevance\` ≥
\`min_relevance\`, and one whose \`scores.relevance\` is below it is always left out.
\`min_relevance: 0\` ranks every candidate. A recall that finds nothing answers
\`200 {"memories": []}\`. The default was measured on LoCoMo with the offline embedder:
asked another user's questions at \`limit\` 10, 2.97 memories come back on average instead
of 10 (none for a third of them), at a cost of 0.008 in recall@10 with the default weights.
A question that shares no word with the memory that answers it (a synonym, with the
offline embedder) can be left out; send \`min_relevance: 0\` to rank by weights alone.

\`score = (w_rec·recency + w_imp·importance + w_rel·relevance) / (w_rec + w_imp + w_rel)\`,
so it is in [0, 1]. The default weights are recency 0.1, importance 0.1, relevance 0.8. A
\`weights\` object **replaces the defaults whole**: a missing key counts as 0; a negative or
non-finite weight, or all three 0, is a 400. \`min_score\` drops memories whose final \`score\`
is below it.

The answer is ordered by \`score\` descending, ties broken by \`id\` ascending, so the same
request over the same data gives the same order; at most \`limit\` memories.

Without \`as_of\`: current memories only (no \`valid_to\`), not past \`expires_at\`, now = the
request time. With \`as_of\`: the memories as they stood at that instant — left out are those
that occurred after it (\`occurred_at\` > \`as_of\`), that had been superseded by then
(\`valid_to\` ≤ \`as_of\`) or had expired by then; and "now" for recency is \`as_of\`.

Filters: \`agent_id\` and \`run_id\` match exactly, \`categories\` matches any of the listed
categories, \`metadata\` matches memories whose metadata contains every given key with the
given value (JSON containment).`,
  scope: SCOPES.read,
  request: {
    body: jsonBody(recallBody, { query: 'What should I cook for Alice?', limit: 5, filters: { metadata: { source: 'onboarding' } } }),
  },
  responses: {
    200: jsonResponse(recallResult, 'The recalled memories, best first.', {
      memories: [{ ...EXAMPLE_MEMORY, score: 0.86, scores: { recency: 0.97, importance: 0.89, relevance: 0.84 } }],
    }),
  },
});

export const recallRoutes = [recallMemories];

export function registerRecallRoutes(app: Router, services: Services): void {
  app.openapi(recallMemories, async (c) => c.json(await recall({ services, principal: c.get('principal') }, c.req.valid('json')), 200));
}
