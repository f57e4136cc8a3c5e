import { describe, expect, it } from 'vitest';
import { OfflineExtractor, factSentences, scoreSentence } from '../../src/extraction/offline-extractor.js';
import { extractedFactSchema, type TranscriptMessage } from '../../src/extraction/types.js';
import { emptyUsage } from '../../src/llm/types.js';

const now = new Date('2024-06-01T12:00:00Z');

async function extract(messages: TranscriptMessage[]) {
  const usage = emptyUsage();
  const facts = await new OfflineExtractor().extract({ messages, now }, usage);
  return { facts, usage };
}

describe('OfflineExtractor', () => {
  it('turns each declarative first-person sentence of the user into a fact about the user', async () => {
    const { facts, usage } = await extract([
      { role: 'user', content: 'Hi! My name is Alice. I live in Paris and I work as a nurse.' },
    ]);
    expect(facts.map((f) => f.content)).toEqual(["User's name is Alice.", 'User lives in Paris and User works as a nurse.']);
    expect(usage).toEqual(emptyUsage());
    for (const fact of facts) expect(extractedFactSchema.safeParse(fact).success).toBe(true);
  });

  it('never takes facts from assistant, system or tool messages', async () => {
    const { facts } = await extract([
      { role: 'system', content: 'I am a helpful assistant. My rules are strict.' },
      { role: 'assistant', content: 'I think you live in Rome. My guess is you love pasta.' },
      { role: 'tool', content: 'I found 3 results for my query.' },
      { role: 'user', content: 'I have two cats.' },
    ]);
    expect(facts.map((f) => f.content)).toEqual(['User has two cats.']);
    expect(facts[0]!.source_message_indexes).toEqual([3]);
  });

  it('drops questions, greetings, thanks, fillers, fragments and requests to the assistant', async () => {
    const { facts } = await extract([
      {
        role: 'user',
        content: [
          'Hello there!',
          'Can you help me plan a trip?',
          'What should I cook tonight',
          'Please write me a poem about my cat.',
          'Tell me a joke.',
          'Thanks, I appreciate it.',
          'ok',
          'Sounds good.',
          'My dog.',
          'The weather is nice today.',
          'I want you to summarise my notes.',
          'I am allergic to peanuts.',
        ].join('\n'),
      },
    ]);
    expect(facts.map((f) => f.content)).toEqual(['User is allergic to peanuts.']);
  });

  it('normalises the final punctuation to one period and strips leading interjections', () => {
    expect(factSentences('I love jazz!!!')).toEqual(['I love jazz.']);
    expect(factSentences('Yes, I am vegetarian')).toEqual(['I am vegetarian.']);
    expect(factSentences('  I   grew up\tin Lyon ;')).toEqual(['I grew up in Lyon.']);
  });

  it('keeps a short contraction sentence ("I\'m Alice") but not a two-word fragment', () => {
    expect(factSentences("I'm Alice.")).toEqual(["I'm Alice."]);
    expect(factSentences('Me too.')).toEqual([]);
  });

  it('does not split at title abbreviations', () => {
    expect(factSentences('Dr. Smith is my doctor.')).toEqual(['Dr. Smith is my doctor.']);
  });

  it("uses the message's created_at as occurred_at, and null without one", async () => {
    const { facts } = await extract([
      { role: 'user', content: 'I live in Berlin.', created_at: '2024-05-01T10:00:00+02:00' },
      { role: 'user', content: 'I play the violin.' },
    ]);
    expect(facts.map((f) => f.occurred_at)).toEqual(['2024-05-01T08:00:00.000Z', null]);
  });

  it('emits a sentence repeated in two messages once, citing both', async () => {
    const again = await extract([
      { role: 'user', content: 'I live in Berlin.' },
      { role: 'user', content: 'i live in berlin!' },
    ]);
    expect(again.facts).toHaveLength(1);
    expect(again.facts[0]!.source_message_indexes).toEqual([0, 1]);
  });

  it('is deterministic', async () => {
    const messages: TranscriptMessage[] = [
      { role: 'user', content: 'My sister Anna lives in Lyon. I hate mornings. I started at Acme in March 2023.' },
    ];
    expect((await extract(messages)).facts).toEqual((await extract(messages)).facts);
  });

  it('returns nothing for a transcript without user text', async () => {
    expect((await extract([{ role: 'assistant', content: 'I can help you with my tools.' }])).facts).toEqual([]);
  });
});

describe('scoreSentence', () => {
  it('scores identity and health highest, a plain fact at the default 5', () => {
    expect(scoreSentence('My name is Alice.')).toEqual({ importance: 9, category: 'personal' });
    expect(scoreSentence('I am allergic to peanuts.')).toEqual({ importance: 10, category: 'health' });
    expect(scoreSentence('I own a red bicycle.')).toEqual({ importance: 5, category: null });
  });

  it('raises importance for relationships, work, strong words and dates', () => {
    expect(scoreSentence('My wife is a teacher.')).toEqual({ importance: 7, category: 'relationship' });
    expect(scoreSentence('I work at Acme as an engineer.')).toEqual({ importance: 6, category: 'work' });
    expect(scoreSentence('I love jazz.')).toEqual({ importance: 6, category: 'preference' });
    expect(scoreSentence('I moved to Berlin in March 2024.').importance).toBe(7);
  });

  it('stays within 1..10', () => {
    const { importance } = scoreSentence('My name is Alice, I am allergic to nuts and I never eat them since January 2020.');
    expect(importance).toBe(10);
  });
});
