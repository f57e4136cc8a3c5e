import { describe, expect, it } from 'vitest';
import { queryWordForms } from '../../src/recall/word-forms.js';

const groupsOf = (query: string) => {
  const byGroup = new Map<number, string[]>();
  for (const { form, group } of queryWordForms(query)) byGroup.set(group, [...(byGroup.get(group) ?? []), form]);
  return [...byGroup.values()];
};

describe('queryWordForms', () => {
  it('gives every form of each irregular word the query uses, its own form included', () => {
    expect(groupsOf('When did Alice meet Bob?')).toEqual([['meet', 'met']]);
    expect(groupsOf('Where Caroline went last summer')).toEqual([['go', 'went', 'gone']]);
    expect(groupsOf('What did the children buy?')).toEqual([
      ['child', 'children'],
      ['buy', 'bought'],
    ]);
  });

  it('knows a form by its regular inflections too', () => {
    expect(groupsOf('Bob meets Alice')).toEqual([['meet', 'met']]);
    expect(groupsOf('where is she going')).toEqual([['go', 'went', 'gone']]);
    expect(groupsOf('taking the bus, running late, she sings')).toEqual([
      ['take', 'took', 'taken'],
      ['run', 'ran'],
      ['sing', 'sang', 'sung'],
    ]);
    expect(groupsOf('goes')).toEqual([['go', 'went', 'gone']]);
    expect(queryWordForms('meetings about things')).toEqual([]);
  });

  it('is case-insensitive and reads possessives as the word', () => {
    expect(groupsOf('MET at the gym')).toEqual([['meet', 'met']]);
    expect(groupsOf("the children's books")).toEqual([['child', 'children']]);
  });

  it('names each group once, however often its forms occur', () => {
    expect(groupsOf('went, gone, go')).toEqual([['go', 'went', 'gone']]);
  });

  it('has nothing to add for regular words, stop words or an empty query', () => {
    expect(queryWordForms('Alice likes hiking in the mountains')).toEqual([]);
    expect(queryWordForms('had been did')).toEqual([]);
    expect(queryWordForms('')).toEqual([]);
  });

  it('keeps to at most 50 groups', () => {
    const many = 'meet go buy eat see make take give find feel think tell say run sit stand win lose pay send sell '.repeat(5) +
      'arise awake beat become begin bend bind bite bleed blow break breed bring build burn catch choose come creep deal dig draw dream drink drive fall feed fight flee fly forget';
    expect(new Set(queryWordForms(many).map((f) => f.group)).size).toBe(50);
  });
});
