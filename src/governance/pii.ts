import { isIPv6 } from 'node:net';

/**
 * The PII redactor: named detectors over plain text, pure and linear in the text's length (every
 * pattern starts only at a token boundary and scans a bounded run, so no input backtracks badly).
 * Each finding is replaced by its kind's placeholder. Detectors run most specific first, so a
 * secret's digits are never taken for a phone number and a redacted span is never seen again.
 */
export type PiiKind = 'secret' | 'email' | 'iban' | 'card' | 'ssn' | 'ip' | 'phone';

export const PII_PLACEHOLDERS: Record<PiiKind, string> = {
  secret: '[SECRET]',
  email: '[EMAIL]',
  iban: '[IBAN]',
  card: '[CARD]',
  ssn: '[SSN]',
  ip: '[IP]',
  phone: '[PHONE]',
};

/** How a kind is named in an answer (never the value). */
export const PII_NAMES: Record<PiiKind, string> = {
  secret: 'a secret (API key, token or private key)',
  email: 'an e-mail address',
  iban: 'an IBAN',
  card: 'a payment card number',
  ssn: 'a US social security number',
  ip: 'an IP address',
  phone: 'a phone number',
};

interface Detector {
  kind: PiiKind;
  /** A cheap test that the pattern could match at all; skips the regex pass over most text. */
  mayOccur?: (text: string, shape: TextShape) => boolean;
  pattern: RegExp;
  /** A second look at a match (checksums, shape) the pattern cannot express. */
  accept?: (match: string) => boolean;
  /**
   * The part of a match to replace, [start, end), when not all of it (a key's name is kept, words
   * after an IBAN are not part of it); undefined: none of it.
   */
  span?: (match: string, groups: string[]) => [number, number] | undefined;
}

const digitsOf = (s: string): string => s.replace(/\D/g, '');

/** Luhn's checksum, as every payment card number carries. */
export function luhnValid(digits: string): boolean {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = digits.charCodeAt(digits.length - 1 - i) - 48;
    if (i % 2 === 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return digits.length > 0 && sum % 10 === 0;
}

/** Countries that issue IBANs: a checksum alone passes one random token in 97. */
const IBAN_COUNTRIES = new Set(
  'AD AE AL AT AZ BA BE BG BH BI BR BY CH CR CY CZ DE DJ DK DO EE EG ES FI FK FO FR GB GE GI GL GR GT HR HU IE IL IQ IS IT JO KW KZ LB LC LI LT LU LV LY MC MD ME MK MN MR MT MU NI NL NO OM PK PL PS PT QA RO RS RU SA SC SD SE SI SK SM SO ST SV TL TN TR UA VA VG XK YE'.split(' '),
);

/** ISO 13616: the country and check digits moved to the end, letters as 10..35, mod 97 is 1. */
export function ibanValid(candidate: string): boolean {
  const iban = candidate.replace(/\s/g, '').toUpperCase();
  if (iban.length < 15 || iban.length > 34 || !/^[A-Z]{2}\d{2}[A-Z0-9]+$/.test(iban) || !IBAN_COUNTRIES.has(iban.slice(0, 2))) return false;
  const moved = iban.slice(4) + iban.slice(0, 4);
  let remainder = 0;
  for (const ch of moved) {
    const code = ch.charCodeAt(0);
    const value = code >= 65 ? String(code - 55) : ch;
    for (const digit of value) remainder = (remainder * 10 + (digit.charCodeAt(0) - 48)) % 97;
  }
  return remainder === 1;
}

/** Shannon entropy in bits per character. */
export function entropyBits(s: string): number {
  const counts = new Map<string, number>();
  for (const ch of s) counts.set(ch, (counts.get(ch) ?? 0) + 1);
  let bits = 0;
  for (const n of counts.values()) {
    const p = n / s.length;
    bits -= p * Math.log2(p);
  }
  return bits;
}

/** Issuer (IIN) ranges and lengths of the major networks: a Luhn-valid order number is not a card. */
const ISSUERS: ReadonlyArray<[from: number, to: number, prefixLength: number, minLength: number, maxLength: number]> = [
  [4, 4, 1, 13, 19], // Visa
  [51, 55, 2, 16, 16], // Mastercard
  [2221, 2720, 4, 16, 16], // Mastercard 2-series
  [2200, 2204, 4, 16, 19], // Mir
  [34, 34, 2, 15, 15], // American Express
  [37, 37, 2, 15, 15],
  [300, 305, 3, 14, 19], // Diners Club
  [36, 36, 2, 14, 19],
  [38, 39, 2, 16, 19],
  [6011, 6011, 4, 16, 19], // Discover
  [644, 649, 3, 16, 19],
  [65, 65, 2, 16, 19],
  [3528, 3589, 4, 16, 19], // JCB
  [62, 62, 2, 16, 19], // UnionPay
  [50, 50, 2, 12, 19], // Maestro
  [56, 58, 2, 12, 19],
  [63, 63, 2, 12, 19],
  [67, 67, 2, 12, 19],
];

export function issuerKnown(digits: string): boolean {
  return ISSUERS.some(([from, to, prefixLength, min, max]) => {
    const prefix = Number(digits.slice(0, prefixLength));
    return digits.length >= min && digits.length <= max && prefix >= from && prefix <= to;
  });
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * A long token that looks random: mixed case and digits, high entropy, not a UUID or a hex hash
 * (commit ids and checksums are not secrets; a lowercase hex run is left alone).
 */
function looksRandom(token: string): boolean {
  const core = token.replace(/=+$/, '');
  if (core.length < 32 || UUID.test(core)) return false;
  if (!/[A-Z]/.test(core) || !/[a-z]/.test(core) || !/\d/.test(core)) return false;
  // Words joined by dashes or underscores (identifiers, slugs) are not keys.
  if (/^[A-Za-z]+(?:[-_][A-Za-z0-9]+)+$/.test(core) && core.split(/[-_]/).every((part) => part.length < 16)) return false;
  return entropyBits(core) >= 4;
}

/**
 * What one pass over the text learns, so most detectors are skipped without running their
 * pattern: chat text rarely has a long digit run, a long token or an "@".
 */
export interface TextShape {
  digits: number;
  /** Longest run of digits, single spaces or dashes between them allowed. */
  digitRun: number;
  /** Longest run of token characters (letters, digits, _ + / -). */
  tokenRun: number;
}

export function shapeOf(text: string): TextShape {
  let digits = 0;
  let digitRun = 0;
  let tokenRun = 0;
  let run = 0;
  let token = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const digit = c >= 48 && c <= 57;
    if (digit) {
      digits++;
      if (++run > digitRun) digitRun = run;
    } else if (!((c === 32 || c === 45) && run > 0)) run = 0;
    if (digit || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95 || c === 43 || c === 47 || c === 45) {
      if (++token > tokenRun) tokenRun = token;
    } else token = 0;
  }
  return { digits, digitRun, tokenRun };
}

const KEY_NAME_HINT = /(?:secret|passw|pwd|token|api[_-]?key|access[_-]?key|private[_-]?key|auth[_-]?key|credential)[\w.-]{0,40}?\s{0,3}[=:]/i;
const KEY_PREFIX_HINT = /sk-|[sprk]k_(?:live|test)_|gh[pousr]_|github_pat_|glpat-|xox[abprs]-|AKIA|AIza|hf_|npm_|SG\.|whsec_/;

export const DETECTORS: readonly Detector[] = [
  {
    kind: 'secret',
    mayOccur: (text) => text.includes('-----BEGIN'),
    pattern: /-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----[\s\S]{0,20000}?-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----/g,
  },
  {
    kind: 'secret',
    mayOccur: (text, shape) => shape.tokenRun >= 20 && text.includes('eyJ'),
    // A JWT: base64url JSON header and payload ({"…), and a signature.
    pattern: /(?<![\w-])eyJ[\w-]{5,4000}\.eyJ[\w-]{5,8000}\.[\w-]{10,2000}/g,
  },
  {
    kind: 'secret',
    // Well-known key prefixes: OpenAI/Anthropic, Stripe, GitHub, GitLab, Slack, AWS, Google,
    // Hugging Face, npm, SendGrid, Standard Webhooks secrets.
    mayOccur: (text, shape) => shape.tokenRun >= 16 && KEY_PREFIX_HINT.test(text),
    pattern:
      /(?<![\w-])(?:sk-(?:proj-|ant-)?[\w-]{20,200}|(?:sk|pk|rk)_(?:live|test)_[\w]{16,200}|gh[pousr]_[A-Za-z0-9]{30,100}|github_pat_\w{30,200}|glpat-[\w-]{20,100}|xox[abprs]-[\w-]{10,200}|AKIA[0-9A-Z]{16}|AIza[\w-]{35}|hf_[A-Za-z0-9]{30,100}|npm_[A-Za-z0-9]{30,100}|SG\.[\w-]{16,100}\.[\w-]{16,100}|whsec_[A-Za-z0-9+/=]{20,200})(?![\w-])/g,
  },
  {
    kind: 'secret',
    mayOccur: (text, shape) => shape.tokenRun >= 16 && /bearer/i.test(text),
    pattern: /\bBearer\s+[\w.~+/-]{16,4000}=*/gi,
  },
  {
    kind: 'secret',
    // A value assigned to a key-like name (aws_secret_access_key=…, password: …): the value goes,
    // the name stays. A plain word ("secret: chocolate") is not a credential.
    mayOccur: (text) => KEY_NAME_HINT.test(text),
    pattern: /(?<![\w.-])([\w.-]{0,40}?(?:secret|passw(?:or)?d|pwd|token|api[_-]?key|access[_-]?key|private[_-]?key|auth[_-]?key|credentials?)[\w.-]{0,40}?\s{0,3}[=:]\s{0,3}["']?)((?!\[)[^\s"'`,;]{8,4000})/gi,
    span: (match, [name = '', value = '']) => (/[^A-Za-z]/.test(value) ? [name.length, match.length] : undefined),
  },
  {
    kind: 'email',
    mayOccur: (text) => text.includes('@'),
    pattern: /(?<![\w.%+-])[\w.%+-]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}\.){1,8}[A-Za-z]{2,24}(?![\w-])/g,
  },
  {
    kind: 'iban',
    mayOccur: (_text, shape) => shape.digits >= 8 && shape.tokenRun >= 4,
    // Either case ("fr14 2004 …" is as much an IBAN); a trailing short word ("… 606 is") is not part of it.
    pattern: /(?<![A-Za-z0-9])[A-Za-z]{2}\d{2}(?: ?[A-Za-z0-9]{4}){2,7}(?: ?[A-Za-z0-9]{1,3})?(?![A-Za-z0-9])/g,
    span: (match) => {
      for (let end = match.length; end > 0; end = match.lastIndexOf(' ', end - 1)) {
        if (ibanValid(match.slice(0, end))) return [0, end];
      }
      return undefined;
    },
  },
  {
    kind: 'ssn',
    mayOccur: (_text, shape) => shape.digitRun >= 9,
    pattern: /(?<![\d-])(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}(?![\d-])/g,
  },
  {
    kind: 'ip',
    // At least two colons around hex digits, or "::".
    mayOccur: (text) => text.includes('::') || /[0-9A-Fa-f]:[0-9A-Fa-f]{1,4}:/.test(text),
    // Before dotted quads, so an IPv4-mapped address (::ffff:192.0.2.128) goes whole.
    pattern: /(?<![\w:.])[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}(?::(?:\d{1,3}\.){3}\d{1,3})?(?![\w:]|\.\d)/g,
    accept: (match) => {
      if (!isIPv6(match)) return false;
      if (match === '::1' || match.includes('.')) return true;
      // "a::b" is a valid address but far likelier a scope operator: ask for some substance.
      const groups = match.split(':').filter((g) => g !== '');
      return groups.length >= 3 || (groups.length === 2 && groups.some((g) => g.length >= 3));
    },
  },
  {
    kind: 'ip',
    mayOccur: (text, shape) => shape.digits >= 4 && text.includes('.'),
    // Dotted quads; a fifth part (1.2.3.4.5) or a leading letter (v1.2.3.4) makes it something else.
    pattern: /(?<![\w.])(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?:\.(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}(?!\.?\d|\w)/g,
  },
  {
    kind: 'card',
    mayOccur: (_text, shape) => shape.digitRun >= 13,
    // Only the groupings cards are printed in: contiguous, 4-4-4-4(-1..3), 4-6-5 / 4-6-4 (Amex,
    // Diners), one separator throughout, so a card never spans an SSN, a date or an address.
    pattern: /(?<![\d-])(?:\d{13,19}|\d{4}([ -])\d{4}\1\d{4}\1\d{4}(?:\1\d{1,3})?|\d{4}([ -])\d{6}\2\d{4,5})(?!\d)/g,
    accept: (match) => {
      const digits = digitsOf(match);
      return issuerKnown(digits) && luhnValid(digits);
    },
  },
  {
    kind: 'phone',
    mayOccur: (text, shape) => shape.digits >= 8 && (text.includes('+') || text.includes('00')),
    // International: + (or 00) and a country code, 8 to 15 digits in all.
    pattern: /(?<![\w+])(?:\+|00)[1-9][\d().\s-]{6,22}\d(?!\w)/g,
    accept: (match) => {
      const digits = digitsOf(match.replace(/^00/, ''));
      return digits.length >= 8 && digits.length <= 15 && !/\s{2}|\n/.test(match);
    },
  },
  {
    kind: 'phone',
    mayOccur: (_text, shape) => shape.digits >= 10,
    // North American: (555) 123-4567, 555-123-4567, 555.123.4567, 555 123 4567, with the country
    // code or trunk prefix that may lead it (1-800-555-0100, 1 415 555 0132, 0 800 123 4567).
    pattern: /(?<![\w-])(?:[01][-. ])?(?:\(\d{3}\) ?|\d{3}[-. ])\d{3}[-. ]\d{4}(?![\w-])/g,
  },
  {
    kind: 'phone',
    mayOccur: (text, shape) => shape.digits >= 9 && text.includes('0'),
    // National with a trunk 0 (most of Europe, the UK): 020 7946 0958, 06 12 34 56 78, 030 1234567.
    pattern: /(?<![\w+.-])0\d{1,4}(?:[ .-]?\d{2,8}){1,4}(?![\w-]|\.\d)/g,
    accept: (match) => {
      const digits = digitsOf(match);
      return digits.length >= 9 && digits.length <= 12 && digits[1] !== '0';
    },
  },
  {
    kind: 'secret',
    mayOccur: (_text, shape) => shape.tokenRun >= 32,
    // May follow an "=" (name=value), never continue a longer token.
    pattern: /(?<![\w+/-])[\w+/-]{32,4000}={0,2}(?![\w+/=-])/g,
    accept: looksRandom,
  },
];

export interface Redaction {
  text: string;
  /** The kinds found, in detector order; empty when the text is unchanged. */
  kinds: PiiKind[];
}

/** Replaces every finding by its placeholder. */
export function redactPii(text: string): Redaction {
  const kinds: PiiKind[] = [];
  let out = text;
  // Taken once: replacing findings by placeholders only shortens runs, so it stays a safe filter.
  const shape = shapeOf(text);
  for (const detector of DETECTORS) {
    if (detector.mayOccur && !detector.mayOccur(out, shape)) continue;
    let found = false;
    const replaced = out.replace(detector.pattern, (match: string, ...rest: unknown[]) => {
      if (detector.accept && !detector.accept(match)) return match;
      if (!detector.span) {
        found = true;
        return PII_PLACEHOLDERS[detector.kind];
      }
      const groups = rest.slice(0, rest.findIndex((r) => typeof r === 'number')) as string[];
      const span = detector.span(match, groups);
      if (!span) return match;
      found = true;
      return match.slice(0, span[0]) + PII_PLACEHOLDERS[detector.kind] + match.slice(span[1]);
    });
    if (found) {
      out = replaced;
      if (!kinds.includes(detector.kind)) kinds.push(detector.kind);
    }
  }
  return { text: out, kinds };
}

/** The kinds of PII a text holds (none: empty). */
export function findPii(text: string): PiiKind[] {
  return redactPii(text).kinds;
}

/** A placeholder left by an earlier redaction: a fact built around one held PII once. */
export function holdsPlaceholder(text: string): boolean {
  return /\[(?:SECRET|EMAIL|IBAN|CARD|SSN|IP|PHONE)\]/.test(text);
}

/** Redacts every string inside a JSON value (object keys are names, not data: left alone). */
export function redactJson<T>(value: T, kinds: Set<PiiKind> = new Set()): { value: T; kinds: Set<PiiKind> } {
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') {
      const r = redactPii(v);
      for (const k of r.kinds) kinds.add(k);
      return r.text;
    }
    if (Array.isArray(v)) return v.map(walk);
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, inner]) => [k, walk(inner)]));
    return v;
  };
  return { value: walk(value) as T, kinds };
}
