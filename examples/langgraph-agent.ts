/**
 * A LangGraph.js graph whose memory is Engram, through `EngramStore`: one node recalls what
 * matters for the user's message and answers, the next asks the model whether the message holds
 * a durable fact and writes it to the store. Works with any OpenAI-compatible server. One user
 * turn per line of standard input.
 *
 *   ENGRAM_TOKEN=$(npm run --silent token -- --tenant demo --user alice) \
 *   OPENAI_API_KEY=sk-… npx tsx examples/langgraph-agent.ts
 *
 * Settings as in openai-agent.ts; ENGRAM_USER_ID names the user (default: the token's `sub`).
 */
import { randomUUID } from 'node:crypto';
import { createInterface } from 'node:readline';
import OpenAI from 'openai';
import { Annotation, END, MessagesAnnotation, START, StateGraph, type LangGraphRunnableConfig } from '@langchain/langgraph';
import { AIMessage, HumanMessage, type BaseMessage } from '@langchain/core/messages';
import { Engram } from '@engram/client';
import { EngramStore } from '@engram/client/langgraph';

const token = process.env.ENGRAM_TOKEN ?? '';
const userId = process.env.ENGRAM_USER_ID ?? (JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString() || '{}') as { sub?: string }).sub;
if (!userId) throw new Error('set ENGRAM_TOKEN (a token with a sub) or ENGRAM_USER_ID');
const store = new EngramStore({ client: new Engram() });
const openai = new OpenAI();
const model = process.env.LLM_MODEL ?? 'gpt-4o-mini';

const toOpenAi = (m: BaseMessage) => ({ role: m.getType() === 'human' ? ('user' as const) : ('assistant' as const), content: String(m.content) });

const State = Annotation.Root({ ...MessagesAnnotation.spec });

async function respond(state: typeof State.State, config: LangGraphRunnableConfig) {
  const message = String(state.messages.at(-1)?.content ?? '');
  // Memories live under [user, "memories"]; a natural-language query goes to Engram's recall.
  const known = await config.store!.search([config.configurable?.user_id, 'memories'], { query: message, limit: 5 });
  const completion = await openai.chat.completions.create({
    model,
    messages: [
      { role: 'system', content: `You are a helpful assistant. What you remember about the user:\n${known.map((i) => `- ${i.value.content}`).join('\n') || '(nothing yet)'}` },
      ...state.messages.map(toOpenAi),
    ],
  });
  return { messages: [new AIMessage(completion.choices[0]?.message.content ?? '')] };
}

async function remember(state: typeof State.State, config: LangGraphRunnableConfig) {
  const message = String(state.messages.findLast((m) => m.getType() === 'human')?.content ?? '');
  const completion = await openai.chat.completions.create({
    model,
    response_format: { type: 'json_object' },
    messages: [
      { role: 'system', content: 'If the user message states a durable fact about the user, answer {"fact": "<the fact, written about the user>"}; otherwise {"fact": null}.' },
      { role: 'user', content: message },
    ],
  });
  const { fact } = JSON.parse(completion.choices[0]?.message.content ?? '{}') as { fact?: string | null };
  if (fact) await config.store!.put([config.configurable?.user_id, 'memories'], randomUUID(), { content: fact });
  return {};
}

const graph = new StateGraph(State)
  .addNode('respond', respond)
  .addNode('remember', remember)
  .addEdge(START, 'respond')
  .addEdge('respond', 'remember')
  .addEdge('remember', END)
  .compile({ store });

let messages: BaseMessage[] = [];
for await (const line of createInterface({ input: process.stdin })) {
  if (line.trim() === '') continue;
  const out = await graph.invoke({ messages: [...messages, new HumanMessage(line.trim())] }, { configurable: { user_id: userId } });
  messages = out.messages;
  console.log(`assistant: ${String(messages.at(-1)?.content)}`);
}
