/**
 * An agent loop with the `openai` package and Engram: before answering, recall what matters for the
 * user's message; after answering, hand the exchange to extraction. Works with any
 * OpenAI-compatible server. One user turn per line of standard input.
 *
 *   ENGRAM_TOKEN=$(npm run --silent token -- --tenant demo --user alice) \
 *   OPENAI_API_KEY=sk-… npx tsx examples/openai-agent.ts
 *
 * Set ENGRAM_URL (default http://127.0.0.1:8080) and ENGRAM_TOKEN for Engram; OPENAI_API_KEY
 * (any value for a local server), OPENAI_BASE_URL (e.g. http://localhost:11434/v1 for Ollama) and
 * LLM_MODEL (default gpt-4o-mini) for the model.
 */
import { createInterface } from 'node:readline';
import OpenAI from 'openai';
import { Engram } from '@engram/client';

const engram = new Engram(); // reads ENGRAM_URL and ENGRAM_TOKEN
const openai = new OpenAI(); // reads OPENAI_API_KEY and OPENAI_BASE_URL
const model = process.env.LLM_MODEL ?? 'gpt-4o-mini';
const history: OpenAI.Chat.ChatCompletionMessageParam[] = [];

for await (const line of createInterface({ input: process.stdin })) {
  const message = line.trim();
  if (message === '') continue;

  // Before answering: the few facts that matter for this message, best first.
  const { memories } = await engram.memories.recall({ query: message, limit: 5 });
  const known = memories.map((m) => `- ${m.content}`).join('\n') || '(nothing yet)';
  const completion = await openai.chat.completions.create({
    model,
    messages: [
      { role: 'system', content: `You are a helpful assistant. What you remember about the user:\n${known}` },
      ...history,
      { role: 'user', content: message },
    ],
  });
  const answer = completion.choices[0]?.message.content ?? '';
  console.log(`assistant: ${answer}`);
  history.push({ role: 'user', content: message }, { role: 'assistant', content: answer });

  // After answering: Engram keeps the durable facts of the exchange (202 at once; here we wait to show the result).
  const { job_id } = await engram.memories.extract({ messages: [{ role: 'user', content: message }, { role: 'assistant', content: answer }] });
  const job = await engram.jobs.wait(job_id, { timeoutMs: 30_000 });
  if (job.result) console.log(`memory: ${job.result.added} added, ${job.result.updated} updated, ${job.result.unchanged} already known`);
  else console.log(`memory: extraction ${job.status}`);
}
