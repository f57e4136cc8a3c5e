/**
 * Rewrites a user's first-person sentence about the user, in the user's own words: "I just moved
 * to Berlin." becomes "User just moved to Berlin.", as the LLM extractor writes its facts, so that
 * memories read the same whichever provider wrote them.
 *
 * Only the first-person singular changes: I → User, me → User, my and mine → User's, myself →
 * themselves, I'm → User is, I've → User has, I'll → User will, I'd → User would (User had before
 * a past participle). After a lone "I" (not "my wife and I") the verb agrees when it is one whose
 * third person is sure: am → is, have → has, do → does, don't → doesn't, and a list of common
 * verbs ("live" → "lives"); "and I" in the sentence's first words is a compound subject ("My
 * wife and I live") and keeps its verb. A past tense, a modal and a word this list does not know stay as they
 * are: "User enjoy hiking" is a better miss than "User wents". "We", "our" and "us" stay (who
 * else is meant is not known), and so does anything inside double quotes (reported speech).
 */

const WORD = /[\p{L}\p{N}]+(?:'[\p{L}]+)?/gu;
const QUOTED = /"[^"]*"|\u201c[^\u201d]*\u201d/g;

/** Words that may stand between "I" and its verb. */
const ADVERBS = new Set(
  (
    'just also still really actually absolutely totally definitely currently mostly only even already finally ' +
    'usually often sometimes always never rarely generally seriously recently truly honestly certainly ' +
    'probably mainly occasionally regularly frequently constantly hardly barely kind sort of'
  ).split(' '),
);

const IRREGULAR: Readonly<Record<string, string>> = {
  am: 'is',
  have: 'has',
  do: 'does',
  "don't": "doesn't",
  "haven't": "hasn't",
  "ain't": "isn't",
  go: 'goes',
};

/** Verbs whose present tense after "I" becomes the third person by the spelling rules. */
const VERBS = new Set(
  (
    'live work love like enjoy prefer hate dislike adore want need own use play study teach speak know think ' +
    'feel believe hope wish plan intend eat drink cook run swim drive ride walk watch listen write paint draw ' +
    'sing dance travel visit make take keep try miss mean care tend volunteer practice practise attend collect ' +
    'follow support wear sleep wake get spend come stay rent help lead manage raise grow identify struggle ' +
    'worry remember forget understand agree disagree suffer avoid prefer teach coach train lift bake knit sew ' +
    'garden hike climb ski surf bike cycle jog fish hunt camp pray meditate volunteer mentor babysit commute ' +
    'belong consider expect find fear look sound seem appreciate admire trust doubt guess suppose wonder ' +
    'realize realise recall recommend love go have keep drink smoke vape drive speak earn save owe pay ' +
    'volunteer celebrate host organize organise run teach tutor deal handle'
  ).split(' '),
);

/** "I'd" means "I had" before these. */
const PARTICIPLES = new Set('been had gone done seen got gotten made taken known better'.split(' '));

function thirdPersonVerb(word: string): string | undefined {
  const lower = word.toLowerCase();
  const irregular = IRREGULAR[lower];
  if (irregular) return irregular;
  if (!VERBS.has(lower)) return undefined;
  if (/(?:s|sh|ch|x|z|o)$/.test(lower)) return `${lower}es`;
  if (/[^aeiou]y$/.test(lower)) return `${lower.slice(0, -1)}ies`;
  return `${lower}s`;
}

interface Token {
  start: number;
  end: number;
  text: string;
}

export function aboutTheUser(sentence: string): string {
  const quoted: Array<[number, number]> = [];
  for (const m of sentence.matchAll(QUOTED)) quoted.push([m.index, m.index + m[0].length]);
  const inQuote = (at: number) => quoted.some(([from, to]) => at >= from && at < to);
  const tokens: Token[] = [];
  for (const m of sentence.matchAll(WORD)) if (!inQuote(m.index)) tokens.push({ start: m.index, end: m.index + m[0].length, text: m[0] });

  const replacements = new Map<number, string>(); // token index -> new text
  const afterAdverbs = (from: number) => {
    let j = from;
    while (j < tokens.length && ADVERBS.has(tokens[j]!.text.toLowerCase())) j++;
    return j;
  };
  tokens.forEach((token, i) => {
    const lower = token.text.toLowerCase();
    const previous = tokens[i - 1]?.text.toLowerCase();
    switch (lower) {
      case 'i': {
        replacements.set(i, 'User');
        // "My wife and I live": a compound subject (one opening the sentence) keeps its plural verb;
        // "I live in Paris and I work" is two clauses.
        if ((previous === 'and' || previous === 'or' || previous === 'nor') && i <= 4) break;
        const j = afterAdverbs(i + 1);
        const verb = tokens[j] && thirdPersonVerb(tokens[j]!.text);
        if (verb) replacements.set(j, verb);
        break;
      }
      case "i'm":
        replacements.set(i, 'User is');
        break;
      case "i've":
        replacements.set(i, 'User has');
        break;
      case "i'll":
        replacements.set(i, 'User will');
        break;
      case "i'd": {
        const next = tokens[afterAdverbs(i + 1)]?.text.toLowerCase() ?? '';
        replacements.set(i, PARTICIPLES.has(next) || /ed$/.test(next) ? 'User had' : 'User would');
        break;
      }
      case 'me':
        replacements.set(i, 'User');
        break;
      case 'my':
      case 'mine':
        replacements.set(i, "User's");
        break;
      case 'myself':
        replacements.set(i, 'themselves');
        break;
    }
  });
  let out = '';
  let at = 0;
  tokens.forEach((token, i) => {
    const replacement = replacements.get(i);
    if (replacement === undefined) return;
    out += sentence.slice(at, token.start) + replacement;
    at = token.end;
  });
  return out + sentence.slice(at);
}
