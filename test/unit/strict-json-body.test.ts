import { OpenAPIHono } from '@hono/zod-openapi';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import type { AppEnv } from '../../src/http/env.js';
import { defineRoute, jsonBody, jsonResponse } from '../../src/http/routing.js';

/**
 * A JSON body is read once: the strict reader's value is what the route's schema validates. Hono's
 * own json() would decode and parse the body a second time (and rebuild it as a Response to do so).
 */
const bodySchema = z.object({ items: z.array(z.object({ text: z.string() })) }).strict();

function appWithEcho() {
  const app = new OpenAPIHono<AppEnv>();
  const route = defineRoute({
    method: 'post',
    path: '/echo',
    public: true,
    request: { body: jsonBody(bodySchema, { items: [{ text: 'a' }] }) },
    responses: { 200: jsonResponse(bodySchema, 'The body as validated.', { items: [{ text: 'a' }] }) },
  });
  app.openapi(route, (c) => c.json(c.req.valid('json'), 200));
  return app;
}

describe('strict JSON body', () => {
  afterEach(() => vi.restoreAllMocks());

  it('parses the body once and validates that value', async () => {
    const app = appWithEcho();
    const body = JSON.stringify({ items: [{ text: 'one' }, { text: 'two' }] });
    const parse = vi.spyOn(JSON, 'parse');
    const response = await app.request('/echo', { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    const parsesOfBody = parse.mock.calls.filter(([text]) => text === body).length;
    parse.mockRestore();
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ items: [{ text: 'one' }, { text: 'two' }] });
    expect(parsesOfBody).toBe(1);
  });
});
