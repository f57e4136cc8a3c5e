import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/harness.js';

/**
 * GET /docs: an interactive API reference that renders with no network beyond this service. The
 * page and everything it loads come from the app; nothing it references is on another host.
 */

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app?.close());

/** Resolves a reference the page makes the way a browser at /docs would. */
const resolve = (ref: string) => new URL(ref, 'http://engram.test/docs');

/** http(s) URLs outside HTML comments: what a browser could fetch from elsewhere. */
function externalUrls(html: string): string[] {
  return [...html.replace(/<!--[\s\S]*?-->/g, '').matchAll(/https?:\/\/[^\s"'<>)]+/g)].map((m) => m[0]);
}

describe('GET /docs', () => {
  it('serves an HTML page, without a token, that references no other host', async () => {
    const res = await app.call('GET', '/docs');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(res.headers.get('x-request-id')).toBeTruthy();
    expect(res.body).toContain('id="swagger-ui"');
    expect(externalUrls(res.body)).toEqual([]);
    // The browser is held to it too: scripts, styles and requests only from this origin.
    const csp = res.headers.get('content-security-policy') ?? '';
    expect(csp).toMatch(/default-src 'none'/);
    expect(csp).toMatch(/script-src 'self'(;|$)/);
    expect(csp).toMatch(/connect-src 'self'(;|$)/);
  });

  it('sends /docs/ to /docs by a relative redirect, where the page\'s relative URLs resolve', async () => {
    const res = await app.call('GET', '/docs/');
    expect(res.status).toBe(301);
    expect(new URL(res.headers.get('location') ?? '', 'http://engram.test/prefix/docs/').pathname).toBe('/prefix/docs');
  });

  it('serves every script, stylesheet and icon the page references, with the right content type', async () => {
    const html = (await app.call('GET', '/docs')).body as string;
    const refs = [...html.matchAll(/\b(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    const expected: Record<string, RegExp> = { '.js': /^text\/javascript/, '.css': /^text\/css/, '.png': /^image\/png$/ };
    expect(refs.filter((r) => r.endsWith('.js')).length).toBeGreaterThanOrEqual(2);
    expect(refs.some((r) => r.endsWith('.css'))).toBe(true);
    for (const ref of refs) {
      const url = resolve(ref);
      expect(url.host, ref).toBe('engram.test');
      const res = await app.call('GET', url.pathname);
      expect(res.status, ref).toBe(200);
      const type = expected[ref.slice(ref.lastIndexOf('.'))];
      expect(type, `unexpected asset kind ${ref}`).toBeDefined();
      expect(res.headers.get('content-type'), ref).toMatch(type!);
      expect(String(res.body).length, ref).toBeGreaterThan(0);
    }
  });

  it('points Swagger UI at this service\'s /openapi.json, with the online validator off', async () => {
    const script = (await app.call('GET', '/docs/assets/init.js')).body as string;
    expect(externalUrls(script)).toEqual([]);
    const spec = /url:\s*'([^']+)'/.exec(script)?.[1];
    expect(spec).toBeDefined();
    expect(resolve(spec!).pathname).toBe('/openapi.json');
    expect(script).toMatch(/validatorUrl:\s*null/);
    const bundle = await app.call('GET', '/docs/assets/swagger-ui-bundle.js');
    expect(bundle.body).toContain('SwaggerUIBundle');
  });

  it('serves only the files the page names: anything else is a problem+json 404', async () => {
    for (const path of ['/docs/assets/package.json', '/docs/assets/..%2F..%2Fpackage.json', '/docs/assets/index.html', '/docs/assets/constructor']) {
      const res = await app.call('GET', path);
      expect(res.status, path).toBe(404);
      expect(res.headers.get('content-type'), path).toBe('application/problem+json');
    }
  });
});
