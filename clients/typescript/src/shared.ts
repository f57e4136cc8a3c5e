import type { Engram, Job } from './index.js';

/**
 * What an extraction job did, in words a model reads well: counts, then the memories it added or
 * changed (at most `limit` looked up), or why it is not done.
 */
export async function describeJob(client: Engram, job: Job, limit = 20): Promise<string> {
  if (job.status === 'failed') return `Extraction failed: ${job.error?.message ?? 'unknown error'} (job ${job.job_id}).`;
  if (job.status !== 'succeeded' || !job.result) {
    return `Extraction is still ${job.status} (job ${job.job_id}); the memories will be there shortly.`;
  }
  const { added, updated, deleted, unchanged, memory_ids } = job.result;
  const lines = [`Extraction done: ${added} added, ${updated} updated, ${deleted} deleted, ${unchanged} already known (left alone).`];
  for (const id of memory_ids.slice(0, limit)) {
    const memory = await client.memories.get(id).catch(() => undefined);
    if (memory) lines.push(`- ${memory.content} (id ${memory.id})`);
  }
  return lines.join('\n');
}
