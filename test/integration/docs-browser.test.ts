/**
 * /docs as a person meets it, in Debian's headless Chromium (installed by scripts/test-services.sh):
 * the page renders with no error or CSP violation, authorizes with a bearer token through its own
 * dialog, and its prefilled "Try it out" recall reaches this service and answers 200.
 */
import { existsSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveHttp } from '../../src/http/serve.js';
import { TEST_BACKEND, startTestApp, tokenFor, uniqueTenant, type TestApp } from '../support/harness.js';

const CHROMIUM = '/usr/bin/chromium';
// The page and what it calls are the same on either backend: one browser run is enough.
const SKIP = TEST_BACKEND === 'pglite';

let app: TestApp;
let server: Server;
let base: string;
let browser: Browser;

beforeAll(async () => {
  if (SKIP) return;
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: run npm run pretest (scripts/test-services.sh installs Debian's chromium)`);
  app = await startTestApp();
  await new Promise<void>((resolve) => {
    server = serveHttp({ fetch: app.runtime.app.fetch, port: 0, hostname: '127.0.0.1' }, (info: AddressInfo) => {
      base = `http://127.0.0.1:${info.port}`;
      resolve();
    });
  });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  await app?.close();
});

describe.skipIf(SKIP)('/docs in a browser', () => {
  it('authorizes with a token and runs the prefilled recall with "Try it out": 200', async () => {
    const tenant = uniqueTenant('docs');
    const token = await tokenFor({ tenant, user: 'alice', scope: 'memories:read memories:write' });
    await app.call('POST', '/memories', { token, body: { memories: [{ content: 'Alice likes to cook pasta', metadata: { source: 'onboarding' } }] } });

    const page = await browser.newPage();
    const problems: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error' || message.type() === 'warning') problems.push(`${message.type()}: ${message.text()}`);
    });
    page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
    const recalls: Array<{ url: string; status: number }> = [];
    page.on('response', (response) => {
      if (new URL(response.url()).pathname === '/memories/recall') recalls.push({ url: response.url(), status: response.status() });
    });

    await page.goto(`${base}/docs`);
    await page.locator('.swagger-ui .info .title').waitFor({ timeout: 30_000 });
    await page.locator('#operations-recall-recallMemories').waitFor();
    // Swagger UI lists problems it found in the document (e.g. a jsonSchemaDialect it cannot read).
    expect(await page.locator('.swagger-ui .errors-wrapper').count()).toBe(0);

    await page.locator('.swagger-ui .auth-wrapper .authorize').click();
    const dialog = page.locator('.swagger-ui .dialog-ux');
    await dialog.locator('input[type=text], input[type=password]').last().fill(token);
    await dialog.locator('button.authorize').last().click();
    await dialog.locator('button.close-modal').click();

    const operation = page.locator('#operations-recall-recallMemories');
    await operation.locator('.opblock-summary').click();
    await operation.locator('button.try-out__btn').click();
    await operation.locator('button.execute').click();
    await operation.locator('.live-responses-table tbody .response-col_status').first().waitFor({ timeout: 30_000 });

    expect(recalls).toEqual([{ url: `${base}/memories/recall`, status: 200 }]);
    expect((await operation.locator('.live-responses-table tbody .response-col_status').first().innerText()).trim()).toBe('200');
    expect(problems).toEqual([]);
    await page.close();
  }, 120_000);
});
