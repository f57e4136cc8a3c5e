import type { Usage } from '../llm/types.js';
import { mapOntoCategories } from '../governance/categories.js';
import { normaliseFactText } from './normalise.js';
import { aboutTheUser } from './third-person.js';
import { FACT_MAX_CHARS, type ExtractInput, type ExtractedFact, type Extractor } from './types.js';

/**
 * The offline extractor (no model, no network): every declarative first-person sentence the user
 * wrote becomes a candidate fact, in the user's words but about the user, as the LLM extractor
 * writes them: "I live in Paris." becomes "User lives in Paris." (third-person.ts says what is
 * rewritten and what is left). Otherwise only whitespace, leading interjections ("Yes, …", "Hi!
 * …") and the final punctuation (always one period) are touched.
 *
 * Dropped: questions, greetings and fillers, requests to the assistant ("can you…", "please…",
 * "tell me…"), fragments under three words, and sentences with no first-person word (I, me, my,
 * we, our, …): those are about something other than the user, and without that rule every
 * "That sounds great." would become a memory. Assistant, system and tool messages are never a
 * source. Importance (default 5) and category come from keyword cues; see `scoreSentence`.
 * This finds what the user said about themselves, not what it means: it is the offline mode,
 * not a stand-in for the LLM pipeline.
 */
export class OfflineExtractor implements Extractor {
  readonly name = 'offline:heuristic';

  async extract(input: ExtractInput, usage: Usage): Promise<ExtractedFact[]> {
    void usage; // offline: nothing is spent
    return extractHeuristicFacts(input);
  }
}

export function extractHeuristicFacts(input: ExtractInput): ExtractedFact[] {
  const facts: ExtractedFact[] = [];
  const seen = new Map<string, ExtractedFact>();
  input.messages.forEach((message, index) => {
    if (message.role !== 'user') return;
    const occurredAt = toIso(message.created_at);
    for (const said of factSentences(message.content)) {
      const sentence = capped(aboutTheUser(said));
      const key = normaliseFactText(sentence);
      const earlier = seen.get(key);
      if (earlier) {
        const sources = earlier.source_message_indexes ?? [];
        if (!sources.includes(index)) sources.push(index);
        earlier.source_message_indexes = sources;
        continue;
      }
      // The cues read the first person, so they score what the user said.
      const { importance, category: cue } = scoreSentence(said);
      const category = input.guidance ? mapOntoCategories(cue, input.guidance.categories) : cue;
      const fact: ExtractedFact = {
        content: sentence,
        importance,
        category,
        occurred_at: occurredAt,
        source_message_indexes: [index],
      };
      seen.set(key, fact);
      facts.push(fact);
    }
  });
  return facts;
}

// ICU (Intl.Segmenter) ends a sentence at "Dr." or "Mr."; these are rejoined with what follows.
const ABBREVIATION_END = /\b(?:dr|mr|mrs|ms|prof|st|jr|sr|mt|vs|no|approx|dept)\.$/i;
const LEADING_INTERJECTIONS =
  /^(?:(?:hi|hello|hey|hiya|greetings|good (?:morning|afternoon|evening)|ok|okay|yes|yeah|yep|no|nope|sure|well|so|anyway|actually|oh|btw|by the way)(?: there)?\s*[,!.:;\u2014-]+\s*)+/i;
const LIST_MARKER = /^\s*(?:[-*\u2022]|\d{1,3}[.)])\s+/;
const INTERROGATIVE_START =
  /^(?:what|why|how|when|where|who|whom|whose|which|do|does|did|is|are|am|can|could|would|will|should|shall|may|might|have|has)\b/i;
const FILLERS = new Set([
  'thanks', 'thank you', 'thx', 'ty', 'ok', 'okay', 'cool', 'great', 'nice', 'sure', 'got it', 'sounds good',
  'bye', 'goodbye', 'see you', 'see ya', 'no problem', 'no worries', 'lol', 'haha', 'hmm', 'perfect', 'awesome',
  "that's great", 'that is great', "that's helpful", 'that is helpful', 'that helps', 'that makes sense',
  'never mind', 'nevermind', 'i see', 'i agree', 'me too', 'i think so', "i don't know", 'i do not know',
  "i'm not sure", 'i am not sure', 'good to know', 'i understand',
]);
const GRATITUDE_START = /^(?:thanks|thank you|thx|many thanks|cheers)\b/i;
const REQUEST_START = new RegExp(
  '^(?:please|pls|plz|kindly|can you|could you|would you|will you|can u|could u|tell me|show me|give me|help me|' +
    "let me know|remind me|let's|lets|write|explain|list|find|make|create|generate|summari[sz]e|translate|draft|" +
    'describe|suggest|recommend|compare|calculate|fix|check|send|book|search|look up|' +
    "i want you to|i need you to|i'd like you to|i would like you to)\\b",
  'i',
);
const FIRST_PERSON = /(?:^|[^\p{L}\p{N}'])(?:i|i'm|i've|i'd|i'll|me|my|mine|myself|we|we're|we've|we'll|us|our|ours)(?![\p{L}\p{N}])/iu;

/** The sentences of one user message that qualify as facts, cleaned as described above. */
export function factSentences(text: string): string[] {
  const segmenter = new Intl.Segmenter('en', { granularity: 'sentence' });
  const sentences: string[] = [];
  for (const line of text.replace(/[\u2018\u2019]/g, "'").split(/\r?\n+/)) {
    let pending = '';
    for (const { segment } of segmenter.segment(line.replace(LIST_MARKER, ''))) {
      const joined = `${pending}${segment}`;
      if (ABBREVIATION_END.test(joined.trim())) {
        pending = joined;
        continue;
      }
      pending = '';
      const cleaned = cleanSentence(joined);
      if (cleaned !== null) sentences.push(cleaned);
    }
    if (pending !== '') {
      const cleaned = cleanSentence(pending);
      if (cleaned !== null) sentences.push(cleaned);
    }
  }
  return sentences;
}

function cleanSentence(raw: string): string | null {
  let sentence = raw.replace(/\s+/g, ' ').trim().replace(LEADING_INTERJECTIONS, '');
  if (sentence === '') return null;
  if (/\?\s*[)"']*$/.test(sentence)) return null;
  const terminated = /[.!\u2026]\s*[)"']*$/.test(sentence);
  if (!terminated && INTERROGATIVE_START.test(sentence)) return null;

  const bare = sentence.toLowerCase().replace(/[^\p{L}\p{N}' ]+/gu, ' ').replace(/\s+/g, ' ').trim();
  if (FILLERS.has(bare) || GRATITUDE_START.test(sentence) || REQUEST_START.test(sentence)) return null;
  if (wordCount(bare) < 3 || !FIRST_PERSON.test(bare)) return null;

  sentence = sentence.replace(/[\s.!\u2026;:,]+$/u, '');
  if (sentence.length >= FACT_MAX_CHARS) sentence = sentence.slice(0, FACT_MAX_CHARS - 1).trimEnd();
  return `${sentence}.`;
}

/** Rewriting lengthens a sentence ("my" → "User's"): cut again to a fact's length, keeping the period. */
function capped(sentence: string): string {
  if (sentence.length <= FACT_MAX_CHARS) return sentence;
  return `${sentence.slice(0, FACT_MAX_CHARS - 1).trimEnd()}.`;
}

/** Words, with a contraction counting as the two it stands for: "I'm Alice" is three words. */
function wordCount(bare: string): number {
  if (bare === '') return 0;
  return bare.split(' ').reduce((n, word) => n + (/\w'(?:m|re|ve|s|ll|d)$/.test(word) ? 2 : 1), 0);
}

interface Cue {
  pattern: RegExp;
  importance: number;
  category: string;
}

// In order of precedence: the first matching cue with the highest importance names the category.
const CUES: readonly Cue[] = [
  {
    pattern:
      /\bmy name(?:'s| is)\b|\bcall me\b|\bi(?:'m| am) called\b|\bi was born\b|\bmy birthday\b|\b\d{1,3} years old\b|\bmy pronouns\b/,
    importance: 9,
    category: 'personal',
  },
  {
    pattern:
      /\ballerg|\bintoleran|\bc(?:o)?eliac\b|\bdiabet|\basthma\b|\bepilep|\bpregnan|\bmedication\b|\bdiagnos|\bsurgery\b|\bdisorder\b|\bdisease\b|\bcancer\b|\bchronic\b|\bblood type\b|\bdisabilit/,
    importance: 9,
    category: 'health',
  },
  {
    pattern:
      /\bmy (?:wife|husband|partner|spouse|sons?|daughters?|kids?|children|child|baby|mother|father|mom|mum|dad|parents?|sisters?|brothers?|siblings?|grand\w+|aunt|uncle|cousins?|girlfriend|boyfriend|fianc[eé]e?|(?:best )?friends?|family|dogs?|cats?|pets?)\b|\bi(?:'m| am| got) (?:married|engaged|divorced|single|widowed)\b|\b(?:i|we) have (?:a |an |one |two |three |four |\d+ )?(?:kids?|children|sons?|daughters?|dogs?|cats?|pets?)\b/,
    importance: 7,
    category: 'relationship',
  },
  {
    pattern: /\bvegan\b|\bvegetarian\b|\bpescatarian\b|\bgluten\b|\bhalal\b|\bkosher\b|\bi (?:don't|do not|never) eat\b/,
    importance: 7,
    category: 'health',
  },
  {
    pattern:
      /\bi work\b|\bi(?:'m| am) working\b|\bmy (?:job|work|boss|manager|team|colleagues?|company|employer|startup|business|career|clients?)\b|\bi(?:'m| am) an? (?:[a-z-]+ )?(?:engineer|developer|programmer|designer|teacher|doctor|nurse|lawyer|student|manager|scientist|researcher|writer|consultant|analyst|accountant|architect|founder)\b|\bi(?:'m| am)? ?study(?:ing)?\b|\bmy (?:degree|thesis|phd|university|school)\b/,
    importance: 6,
    category: 'work',
  },
  {
    pattern:
      /\bi live\b|\bi(?:'m| am) (?:from|based in|living in)\b|\b(?:i|we) (?:just )?moved\b|\bmy (?:home|hometown|apartment|flat|house)\b|\bi grew up\b/,
    importance: 6,
    category: 'location',
  },
  {
    pattern:
      /\bi(?:'m| am) (?:going to|planning|about to)\b|\bi (?:will|plan|intend|want to)\b|\bi'll\b|\bnext (?:week|month|year)\b|\btomorrow\b/,
    importance: 5,
    category: 'plan',
  },
  {
    pattern:
      /\bi (?:really |absolutely |do(?:n't| not) )?(?:love|like|enjoy|prefer|hate|dislike|adore)\b|\bi (?:can't|cannot) stand\b|\bmy fav(?:ou?rite)?\b/,
    importance: 5,
    category: 'preference',
  },
];
const STRONG_WORDS = /\b(?:love|hate|always|never|allergic|can't stand|cannot stand|must|favou?rite)\b/;
const DATE_CUE = new RegExp(
  '\\b(?:january|february|april|june|july|august|september|october|november|december|' +
    '(?:in|on|since|until|by) (?:may|march)|monday|tuesday|wednesday|thursday|friday|saturday|sunday|' +
    'yesterday|tomorrow|today|last (?:week|month|year)|next (?:week|month|year)|' +
    '\\d{4}-\\d{2}-\\d{2}|\\d{1,2}[/.]\\d{1,2}[/.]\\d{2,4}|(?:19|20)\\d{2})\\b',
);

/**
 * Importance 1-10: the strongest matching cue (identity and health 9, relationships and diet 7,
 * work and location 6, plans and preferences 5; default 5), plus one for a strong word ("love",
 * "never", "allergic", …) and one for a date. Category: that cue's, or null when none matched.
 */
export function scoreSentence(sentence: string): { importance: number; category: string | null } {
  const text = sentence.toLowerCase().replace(/[\u2018\u2019]/g, "'");
  let importance = 5;
  let category: string | null = null;
  let best = 0;
  for (const cue of CUES) {
    if (cue.importance > best && cue.pattern.test(text)) {
      best = cue.importance;
      importance = cue.importance;
      category = cue.category;
    }
  }
  if (STRONG_WORDS.test(text)) importance += 1;
  if (DATE_CUE.test(text)) importance += 1;
  return { importance: Math.min(10, Math.max(1, importance)), category };
}

function toIso(value: string | undefined): string | null {
  if (value === undefined) return null;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? null : new Date(ms).toISOString();
}
