import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HumanMessage, SystemMessage, type BaseMessage } from '@langchain/core/messages';
import { FakeListChatModel } from '@langchain/core/utils/testing';
import { MessagesAnnotation, StateGraph, type LangGraphRunnableConfig } from '@langchain/langgraph';
import { Engram } from '@engram/client';
import { EngramStore } from '@engram/client/langgraph';
import { startService, type Service } from './service.js';

/** EngramStore, a LangGraph.js BaseStore, against the real service: directly and inside a real StateGraph. */

let service: Service;
beforeAll(async () => {
  service = await startService();
});
afterAll(async () => {
  await service?.close();
});

async function storeFor(user: string) {
  const client = new Engram({ baseURL: service.url, token: await service.token(user) });
  return { client, store: new EngramStore({ client }) };
}

describe('EngramStore', () => {
  it('put, get, update in place and delete an item by namespace and key', async () => {
    const { client, store } = await storeFor('lg-ann');
    await store.put(['lg-ann', 'profile'], 'diet', { content: 'User is vegetarian', since: 2019 });
    const item = await store.get(['lg-ann', 'profile'], 'diet');
    expect(item).toMatchObject({ namespace: ['lg-ann', 'profile'], key: 'diet', value: { content: 'User is vegetarian', since: 2019 } });
    expect(item!.createdAt).toBeInstanceOf(Date);

    // The same key elsewhere is another item; the same key again updates the memory in place.
    await store.put(['lg-ann', 'profile', 'old'], 'diet', { content: 'User ate meat' });
    await store.put(['lg-ann', 'profile'], 'diet', { content: 'User is vegan' });
    expect((await store.get(['lg-ann', 'profile'], 'diet'))!.value).toEqual({ content: 'User is vegan' });
    const memories = (await client.memories.list()).memories;
    expect(memories.map((m) => m.content).sort()).toEqual(['User ate meat', 'User is vegan']);
    const vegan = memories.find((m) => m.content === 'User is vegan')!;
    expect(vegan.metadata).toMatchObject({ langgraph: { namespace: ['profile'], key: 'diet' } });

    await store.delete(['lg-ann', 'profile'], 'diet');
    expect(await store.get(['lg-ann', 'profile'], 'diet')).toBeNull();
    expect(await store.get(['lg-ann', 'profile', 'old'], 'diet')).not.toBeNull();
  });

  it('search with a query recalls best first with scores, within the namespace prefix and the filter', async () => {
    const { store } = await storeFor('lg-ben');
    await store.batch([
      { namespace: ['lg-ben', 'prefs'], key: 'food', value: { content: 'Ben loves spicy Thai food', kind: 'food' } },
      { namespace: ['lg-ben', 'prefs'], key: 'music', value: { content: 'Ben listens to jazz', kind: 'music' } },
      { namespace: ['lg-ben', 'work'], key: 'job', value: { content: 'Ben cooks Thai food at a restaurant', kind: 'food' } },
    ]);
    const hits = await store.search(['lg-ben', 'prefs'], { query: 'What food does Ben like?' });
    expect(hits[0]).toMatchObject({ key: 'food', namespace: ['lg-ben', 'prefs'], score: expect.any(Number) });
    expect(hits.every((h) => h.namespace[1] === 'prefs')).toBe(true);

    const food = await store.search(['lg-ben'], { query: 'Thai food', filter: { kind: 'food' } });
    expect(food.map((h) => h.key).sort()).toEqual(['food', 'job']);
    const noQuery = await store.search(['lg-ben'], { filter: { kind: 'music' } });
    expect(noQuery.map((h) => h.key)).toEqual(['music']);
    const paged = await store.search(['lg-ben'], { limit: 2, offset: 1 });
    expect(paged.map((h) => h.key)).toEqual(['music', 'food']);
    await expect(store.search(['lg-ben'], { filter: { kind: { $ne: 'x' } } })).rejects.toThrow(/not supported/);
  });

  it('memories the store did not write are items under [user_id], keyed by their id', async () => {
    const { client, store } = await storeFor('lg-cat');
    const { memories } = await client.memories.add({ memories: [{ content: 'Cat has a parrot' }] });
    const id = memories[0]!.id;
    expect(await store.get(['lg-cat'], id)).toMatchObject({ key: id, namespace: ['lg-cat'], value: { content: 'Cat has a parrot', importance: 5 } });
    const [hit] = await store.search(['lg-cat'], { query: 'parrot' });
    expect(hit).toMatchObject({ key: id });
  });

  it('listNamespaces lists one user\'s namespaces, with match conditions and depth', async () => {
    const { store } = await storeFor('lg-dan');
    await store.put(['lg-dan', 'a', 'x'], 'k1', { content: 'one' });
    await store.put(['lg-dan', 'a', 'y'], 'k2', { content: 'two' });
    await store.put(['lg-dan', 'b'], 'k3', { content: 'three' });
    expect(await store.listNamespaces({ prefix: ['lg-dan'] })).toEqual([['lg-dan', 'a', 'x'], ['lg-dan', 'a', 'y'], ['lg-dan', 'b']]);
    expect(await store.listNamespaces({ prefix: ['lg-dan', 'a'], maxDepth: 2 })).toEqual([['lg-dan', 'a']]);
    expect(await store.listNamespaces({ prefix: ['lg-dan'], suffix: ['y'] })).toEqual([['lg-dan', 'a', 'y']]);
    await expect(store.listNamespaces({})).rejects.toThrow(/one user at a time/);
  });

  it('put null deletes; another user\'s namespace is refused by the service', async () => {
    const { store } = await storeFor('lg-eve');
    await store.put(['lg-eve', 'n'], 'k', { content: 'temporary' });
    await store.batch([{ namespace: ['lg-eve', 'n'], key: 'k', value: null }]);
    expect(await store.get(['lg-eve', 'n'], 'k')).toBeNull();
    await expect(store.put(['someone-else', 'n'], 'k', { content: 'x' })).rejects.toMatchObject({ status: 403 });
  });
});

describe('EngramStore in a StateGraph', () => {
  it('a node recalls memories into the prompt and writes new ones through the store', async () => {
    const prompts: BaseMessage[][] = [];
    const model = new FakeListChatModel({ responses: ['Noted!', 'How about a chickpea curry?'] });
    const respond = async (state: typeof MessagesAnnotation.State, config: LangGraphRunnableConfig) => {
      const userId = config.configurable?.user_id as string;
      const store = config.store!;
      const last = state.messages.at(-1)!.content as string;
      const known = await store.search([userId, 'memories'], { query: last, limit: 3 });
      const system = new SystemMessage(`Known about the user:\n${known.map((m) => `- ${m.value.content}`).join('\n') || '(nothing)'}`);
      if (last.startsWith('Remember: ')) await store.put([userId, 'memories'], randomUUID(), { content: last.slice('Remember: '.length) });
      const reply = await model.invoke([system, ...state.messages], { callbacks: [{ handleChatModelStart: (_llm, messages) => void prompts.push(messages[0]!) }] });
      return { messages: [reply] };
    };
    const { client, store } = await storeFor('lg-fay');
    const graph = new StateGraph(MessagesAnnotation).addNode('respond', respond).addEdge('__start__', 'respond').compile({ store });

    await graph.invoke({ messages: [new HumanMessage('Remember: User is vegetarian and allergic to nuts')] }, { configurable: { user_id: 'lg-fay' } });
    expect((await client.memories.list()).memories.map((m) => m.content)).toEqual(['User is vegetarian and allergic to nuts']);

    const out = await graph.invoke({ messages: [new HumanMessage('What should I cook tonight for a vegetarian dinner?')] }, { configurable: { user_id: 'lg-fay' } });
    expect(out.messages.at(-1)!.content).toBe('How about a chickpea curry?');
    expect(prompts[1]![0]!.content).toContain('- User is vegetarian and allergic to nuts');
  });
});
