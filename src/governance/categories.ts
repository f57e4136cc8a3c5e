import type { CategoryDefinition } from '../settings/schemas.js';

/** Words that say what each built-in category covers, to find its counterpart in a custom list. */
const COVERS: Record<string, readonly string[]> = {
  personal: ['personal', 'identity', 'name', 'names', 'age', 'birthday', 'pronouns', 'languages', 'bio', 'profile'],
  preference: ['preference', 'preferences', 'likes', 'dislikes', 'taste', 'tastes', 'favourites', 'favorites'],
  health: ['health', 'medical', 'medicine', 'allergy', 'allergies', 'diet', 'dietary', 'food', 'conditions', 'wellbeing', 'fitness'],
  relationship: ['relationship', 'relationships', 'family', 'friends', 'partner', 'people', 'pets', 'contacts', 'social'],
  work: ['work', 'job', 'jobs', 'career', 'employer', 'employment', 'profession', 'professional', 'studies', 'education', 'business'],
  location: ['location', 'locations', 'home', 'city', 'address', 'residence', 'place', 'places', 'geography'],
  plan: ['plan', 'plans', 'goals', 'events', 'schedule', 'calendar', 'upcoming', 'intentions', 'trips', 'travel'],
  hobby: ['hobby', 'hobbies', 'sports', 'sport', 'pastimes', 'leisure', 'interests', 'routines'],
};

const words = (text: string): Set<string> => new Set(text.toLowerCase().split(/[^\p{L}\p{N}]+/u).filter(Boolean));

/**
 * The offline extractor's cue category (a built-in name) carried onto the job's category list:
 * the same name when listed, else the first category whose name or description speaks of what the
 * built-in one covers, else null. The offline path never invents a category.
 */
export function mapOntoCategories(builtIn: string | null, categories: readonly CategoryDefinition[]): string | null {
  if (builtIn === null) return null;
  if (categories.some((c) => c.name === builtIn)) return builtIn;
  const covers = COVERS[builtIn] ?? [builtIn];
  for (const category of categories) {
    const said = words(`${category.name} ${category.description}`);
    if (covers.some((w) => said.has(w))) return category.name;
  }
  return null;
}
