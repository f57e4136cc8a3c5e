import { describe, expect, it } from 'vitest';
import { PgDialect } from 'drizzle-orm/pg-core';
import { setConfigStatement, setConfigStatementText } from '../../src/db/client.js';

/** PostgreSQL transactions send the prebuilt text: it must be the statement drizzle builds, parameters in order. */
describe('setConfigStatementText', () => {
  it.each([1, 2, 3])('is what drizzle builds for %i setting(s), with the names and values flattened in order', (count) => {
    const settings = Array.from({ length: count }, (_, i) => [`app.name_${i}`, `value ${i}`] as const);
    const built = new PgDialect().sqlToQuery(setConfigStatement(settings));
    expect(setConfigStatementText(count)).toBe(built.sql);
    expect(settings.flat()).toEqual(built.params);
  });
});
