import { describe, expect, it } from 'vitest';
import { OfflineExtractor } from '../../src/extraction/offline-extractor.js';
import { aboutTheUser } from '../../src/extraction/third-person.js';
import { emptyUsage } from '../../src/llm/types.js';

// What the user said, and the fact as it is stored: in the user's words, about the user.
const TABLE: ReadonlyArray<readonly [said: string, stored: string]> = [
  ['I just moved to Berlin.', 'User just moved to Berlin.'],
  ['I live in Paris.', 'User lives in Paris.'],
  ['i live in paris.', 'User lives in paris.'],
  ['I am allergic to peanuts.', 'User is allergic to peanuts.'],
  ["I'm a nurse.", 'User is a nurse.'],
  ["I've got two cats.", 'User has got two cats.'],
  ['I have two cats.', 'User has two cats.'],
  ["I'll start at Acme in May.", 'User will start at Acme in May.'],
  ["I'd love to visit Japan.", 'User would love to visit Japan.'],
  ["I'd been to Rome before.", 'User had been to Rome before.'],
  ['My name is Alice.', "User's name is Alice."],
  ['My sister lives in Lyon with my parents.', "User's sister lives in Lyon with User's parents."],
  ['That blue bike is mine.', "That blue bike is User's."],
  ['My friends call me Al.', "User's friends call User Al."],
  ['I taught myself Spanish.', 'User taught themselves Spanish.'],
  ["I don't eat meat.", "User doesn't eat meat."],
  ['I do not eat meat.', 'User does not eat meat.'],
  ['I really enjoy hiking.', 'User really enjoys hiking.'],
  ['I usually watch films on Sundays.', 'User usually watches films on Sundays.'],
  ['I study biology.', 'User studies biology.'],
  ['I go climbing every week.', 'User goes climbing every week.'],
  ['I went to Lisbon last year.', 'User went to Lisbon last year.'],
  ['I was born in 1990.', 'User was born in 1990.'],
  ['I can speak French.', 'User can speak French.'],
  ['My wife and I live in Oslo.', "User's wife and User live in Oslo."],
  ['I live in Paris and I work as a nurse.', 'User lives in Paris and User works as a nurse.'],
  ["I haven't been to Asia.", "User hasn't been to Asia."],
  // Words that hold an "i" or "my" are not pronouns; quoted speech is left as said.
  ['I visited Miami and my myopia got worse.', "User visited Miami and User's myopia got worse."],
  ['My mom always says "I love you" to me.', 'User\'s mom always says "I love you" to User.'],
  ['We moved to Berlin with our kids.', 'We moved to Berlin with our kids.'],
];

describe('aboutTheUser', () => {
  it.each(TABLE)('%s → %s', (said, stored) => {
    expect(aboutTheUser(said)).toBe(stored);
  });
});

describe('OfflineExtractor writes facts about the user', () => {
  it('stores "I just moved to Berlin." as "User just moved to Berlin.", scored by what was said', async () => {
    const facts = await new OfflineExtractor().extract(
      { messages: [{ role: 'user', content: 'I just moved to Berlin. My name is Alice.' }], now: new Date('2024-06-01T00:00:00Z') },
      emptyUsage(),
    );
    expect(facts.map((f) => [f.content, f.importance, f.category])).toEqual([
      ['User just moved to Berlin.', 6, 'location'],
      ["User's name is Alice.", 9, 'personal'],
    ]);
  });
});
