/**
 * At most `perKey` tasks of one key at once; the others wait their turn, first come first served.
 * Recall runs its database work through one keyed by tenant, so that a tenant sending many costly
 * recalls at once holds a few of the pool's connections and of PostgreSQL's cores, not all of them.
 */
export class KeyedLimiter {
  private readonly slots = new Map<string, { active: number; waiting: Array<() => void> }>();

  constructor(readonly perKey: number) {
    if (!Number.isInteger(perKey) || perKey < 1) throw new RangeError(`perKey must be a positive integer, got ${perKey}`);
  }

  async run<T>(key: string, task: () => Promise<T>): Promise<T> {
    let slot = this.slots.get(key);
    if (!slot) this.slots.set(key, (slot = { active: 0, waiting: [] }));
    if (slot.active < this.perKey) slot.active++;
    else await new Promise<void>((resolve) => slot.waiting.push(resolve));
    try {
      return await task();
    } finally {
      // A finished task hands its place to the next in line, or gives it back.
      const next = slot.waiting.shift();
      if (next) next();
      else if (--slot.active === 0) this.slots.delete(key);
    }
  }

  /** Tasks of this key running and waiting (for tests and metrics). */
  load(key: string): { active: number; waiting: number } {
    const slot = this.slots.get(key);
    return { active: slot?.active ?? 0, waiting: slot?.waiting.length ?? 0 };
  }
}
