import { z } from 'zod';

/** A category name as extraction writes it: one lowercase word. */
export const categoryName = z
  .string()
  .trim()
  .min(1)
  .max(64)
  // An ASCII pattern (the document's readers lack Unicode classes), and lowercase checked whole.
  .regex(/^[^\sA-Z]+$/, 'must be one lowercase word')
  .refine((name) => name === name.toLowerCase(), 'must be one lowercase word')
  .meta({ description: 'One lowercase word: no white space, no capitals.' });

export const categoryDefinition = z
  .strictObject({
    name: categoryName,
    description: z.string().trim().max(500).default('').meta({ description: 'What belongs in it; the LLM extractor reads it.' }),
  })
  .meta({ id: 'CategoryDefinition' });
export type CategoryDefinition = z.output<typeof categoryDefinition>;

export const MAX_INSTRUCTIONS_CHARS = 4000;
export const MAX_CATEGORIES = 50;

export const instructionsText = z.string().max(MAX_INSTRUCTIONS_CHARS);

const PII_MODE = `\`redact\`: e-mail addresses, phone numbers, payment card numbers (Luhn-checked), IBANs, US SSNs, IP addresses and secrets (API keys, tokens, private keys) are replaced by \`[EMAIL]\`, \`[PHONE]\`, \`[CARD]\`, \`[IBAN]\`, \`[SSN]\`, \`[IP]\`, \`[SECRET]\` before anything is stored (memories, history, the job's transcript). \`reject\`: the transcript is redacted the same way, an extracted fact that held any is skipped (\`skipped.pii\`), and a direct add or PATCH holding one is a 422 naming the kind, never the value.`;

/** A list of categories: names unique, at most 50. */
export const categoryList = z
  .array(categoryDefinition)
  .max(MAX_CATEGORIES)
  .superRefine((list, ctx) => {
    const seen = new Set<string>();
    list.forEach((c, index) => {
      if (seen.has(c.name)) ctx.addIssue({ code: 'custom', path: [index, 'name'], message: `category "${c.name}" is listed twice` });
      seen.add(c.name);
    });
  });

/** The built-in categories, used until a tenant (or a request) names its own. */
export const BUILT_IN_CATEGORIES: readonly CategoryDefinition[] = [
  { name: 'personal', description: 'identity: name, age, birthday, languages, pronouns' },
  { name: 'preference', description: 'likes, dislikes and lasting preferences' },
  { name: 'health', description: 'allergies, medical conditions, diet' },
  { name: 'relationship', description: 'family, partner, friends and pets' },
  { name: 'work', description: 'job, employer, studies and career' },
  { name: 'location', description: 'where the user lives, comes from or moved to' },
  { name: 'plan', description: 'goals, plans and upcoming events' },
  { name: 'hobby', description: 'hobbies, sports, pastimes and routines' },
];

const ttlDays = z.number().int().min(1).max(36_500).meta({ description: 'Days a memory is kept.' });

/** Tenant settings as stored and answered. PUT takes the whole document; missing keys take defaults. */
export const settingsSchema = z.strictObject({
  extraction: z
    .strictObject({
      instructions: instructionsText.default('').meta({
        description:
          "The tenant's rules of what to keep and what to skip (at most 4000 characters), given to the LLM extractor fenced below its own rules: they never change the output schema or the resolver's rules.",
      }),
      categories: categoryList.default(() => BUILT_IN_CATEGORIES.map((c) => ({ ...c }))).meta({
        description:
          'The categories extraction may give a fact (the structured-output enum), at most 50; default the built-in list: personal, preference, health, relationship, work, location, plan, hobby. The offline extractor maps its cues onto them where it can, else null.',
      }),
      exclude_categories: z
        .array(categoryName)
        .max(MAX_CATEGORIES)
        .default([])
        .meta({ description: 'Facts extracted into one of these categories are never stored (`skipped.excluded`).' }),
    })
    .default({ instructions: '', categories: BUILT_IN_CATEGORIES.map((c) => ({ ...c })), exclude_categories: [] }),
  pii: z
    .strictObject({ mode: z.enum(['off', 'redact', 'reject']).default('off').meta({ description: PII_MODE }) })
    .default({ mode: 'off' }),
  retention: z
    .strictObject({
      default_ttl_days: ttlDays.nullable().default(null).meta({ description: 'Days a new memory is kept when neither it nor its category says; null keeps it.' }),
      by_category: z.record(categoryName, ttlDays).default({}).meta({ description: 'Days kept, by category name.' }),
    })
    .default({ default_ttl_days: null, by_category: {} })
    .refine((r) => Object.keys(r.by_category).length <= MAX_CATEGORIES, { message: `at most ${MAX_CATEGORIES} categories`, path: ['by_category'] }),
}).meta({ description: "A tenant's governance of what is remembered. A PUT replaces it whole; a missing key takes its default." });
/** The same, named as a component for the answers (request bodies stay inline in the document). */
export const settingsAnswer = settingsSchema.meta({ id: 'Settings' });
export type Settings = z.output<typeof settingsSchema>;
export type PiiMode = Settings['pii']['mode'];

export function defaultSettings(): Settings {
  return settingsSchema.parse({});
}
