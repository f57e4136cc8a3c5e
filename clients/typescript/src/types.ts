/**
 * Names for the shapes of the API. Every one is taken from the types `openapi-typescript` generates
 * from the service's `openapi.yaml` (src/generated, rebuilt by `npm run build`); none is written by hand.
 */
import type { components, operations } from './generated/openapi.js';

type Schemas = components['schemas'];
type JsonOf<T> = T extends { content: { 'application/json': infer Body } } ? Body : never;
type RequestBody<Op extends keyof operations> = JsonOf<NonNullable<operations[Op]['requestBody']>>;
type ResponseBody<Op extends keyof operations, Status extends keyof operations[Op]['responses']> = JsonOf<
  operations[Op]['responses'][Status]
>;

export type Memory = Schemas['Memory'];
export type RecalledMemory = Schemas['RecalledMemory'];
export type MemoryEvent = Schemas['MemoryEvent'];
export type Job = Schemas['Job'];
export type JobStatus = Schemas['JobStatus'];
export type JobResult = NonNullable<Job['result']>;
export type TranscriptMessage = Schemas['TranscriptMessage'];
export type Problem = Schemas['Problem'];
export type FieldError = Schemas['FieldError'];

export type MemoryAddParams = RequestBody<'addMemories'>;
export type MemoryAddResponse = ResponseBody<'addMemories', 201>;
export type MemoryRecallParams = RequestBody<'recallMemories'>;
export type MemoryRecallResponse = ResponseBody<'recallMemories', 200>;
export type MemoryExtractParams = RequestBody<'extractMemories'>;
export type MemoryExtractResponse = ResponseBody<'extractMemories', 202>;
export type MemoryListParams = NonNullable<operations['listMemories']['parameters']['query']>;
export type MemoryPage = ResponseBody<'listMemories', 200>;
export type MemoryUpdateParams = RequestBody<'updateMemory'>;
export type MemoryHistory = ResponseBody<'getMemoryHistory', 200>;
export type MemoryEraseParams = RequestBody<'deleteMemories'>;
export type ErasureReceipt = ResponseBody<'deleteMemories', 200>;
