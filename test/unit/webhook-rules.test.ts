import { describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { retryDelay } from '../../src/webhooks/dispatcher.js';
import { decryptSecret, encryptSecret, generateSigningSecret } from '../../src/webhooks/secrets.js';
import { checkWebhookTarget, classifyAddress, parseWebhookUrl, refusal } from '../../src/webhooks/url-rules.js';

describe('webhook address rules', () => {
  it.each([
    ['169.254.169.254', 'link_local'],
    ['169.254.0.1', 'link_local'],
    ['fe80::1', 'link_local'],
    ['febf:ffff::1', 'link_local'],
    ['::ffff:169.254.169.254', 'link_local'],
    ['::ffff:a9fe:a9fe', 'link_local'],
    ['64:ff9b::a9fe:a9fe', 'link_local'],
    ['2002:a9fe:a9fe::1', 'link_local'],
    ['127.0.0.1', 'loopback'],
    ['::1', 'loopback'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['0.0.0.0', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['100.64.0.1', 'private'],
    ['fd00:ec2::254', 'private'],
    ['fc00::1', 'private'],
    ['224.0.0.1', 'unroutable'],
    ['::', 'unroutable'],
    ['8.8.8.8', 'public'],
    ['172.32.0.1', 'public'],
    ['2606:4700:4700::1111', 'public'],
    ['::ffff:8.8.8.8', 'public'],
  ])('%s is %s', (address, kind) => {
    expect(classifyAddress(address)).toBe(kind);
  });

  it('refuses link-local even when private addresses are allowed', () => {
    expect(refusal('169.254.169.254', true)).toMatch(/link-local/);
    expect(refusal('fe80::1', true)).toMatch(/link-local/);
    expect(refusal('127.0.0.1', true)).toBeUndefined();
    expect(refusal('127.0.0.1', false)).toMatch(/WEBHOOK_ALLOW_PRIVATE/);
    expect(refusal('8.8.8.8', false)).toBeUndefined();
  });

  it('wants https:// unless private targets are allowed, and no credentials', () => {
    expect(() => parseWebhookUrl('http://example.com/hook', false)).toThrow(/https/);
    expect(parseWebhookUrl('http://example.com/hook', true).protocol).toBe('http:');
    expect(() => parseWebhookUrl('https://user:pw@example.com/', false)).toThrow(/credentials/);
    expect(() => parseWebhookUrl('file:///etc/passwd', true)).toThrow(/https/);
    expect(() => parseWebhookUrl('not a url', true)).toThrow(/absolute/);
  });

  it('checks literal addresses and names that resolve to forbidden ones', async () => {
    await expect(checkWebhookTarget('https://[fe80::1]/x', true)).rejects.toThrow(/link-local/);
    await expect(checkWebhookTarget('https://[::ffff:169.254.169.254]/x', true)).rejects.toThrow(/link-local/);
    await expect(checkWebhookTarget('https://127.0.0.1/x', false)).rejects.toThrow(/loopback/);
    await expect(checkWebhookTarget('https://localhost/x', false)).rejects.toThrow(/loopback/);
    await expect(checkWebhookTarget('https://127.0.0.1:8443/x', true)).resolves.toBeInstanceOf(URL);
  });
});

describe('webhook retries', () => {
  it('follows the schedule with ±20% jitter, and stops after it', () => {
    const schedule = [1000, 60_000];
    expect(retryDelay(schedule, 1, () => 0)).toBe(800);
    expect(retryDelay(schedule, 1, () => 1)).toBe(1200);
    expect(retryDelay(schedule, 2, () => 0.5)).toBe(60_000);
    expect(retryDelay(schedule, 3)).toBeUndefined();
  });

  it('retries for at least 24 hours by default', async () => {
    const { loadConfig } = await import('../../src/config.js');
    const total = loadConfig({}).webhooks.retryScheduleMs.reduce((a, b) => a + b, 0);
    expect(total * 0.8).toBeGreaterThanOrEqual(24 * 3_600_000);
  });
});

describe('webhook secrets', () => {
  it('are Standard Webhooks secrets, stored encrypted and bound to their endpoint', () => {
    const key = Buffer.alloc(32, 7);
    const secret = generateSigningSecret();
    expect(() => new Webhook(secret)).not.toThrow();
    const stored = encryptSecret(key, 't\u001fe1', secret);
    expect(stored).not.toContain(secret.slice(6, 20));
    expect(decryptSecret(key, 't\u001fe1', stored)).toBe(secret);
    expect(() => decryptSecret(key, 't\u001fe2', stored)).toThrow();
    expect(() => decryptSecret(Buffer.alloc(32, 8), 't\u001fe1', stored)).toThrow();
  });
});

describe('postWebhook', () => {
  it('gives up at once when the worker stops, and refuses forbidden literals without connecting', async () => {
    const { createServer } = await import('node:http');
    const { postWebhook } = await import('../../src/webhooks/dispatcher.js');
    const server = createServer(() => {}); // never answers
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    const port = (server.address() as { port: number }).port;
    try {
      const stopping = new AbortController();
      const pending = postWebhook(`http://127.0.0.1:${port}/`, '{}', {}, { timeoutMs: 30_000, allowPrivate: true, signal: stopping.signal });
      setTimeout(() => stopping.abort(), 50);
      expect(await pending).toEqual({ statusCode: null, error: 'the worker stopped mid-delivery' });
      expect(await postWebhook(`http://127.0.0.1:${port}/`, '{}', {}, { timeoutMs: 30_000, allowPrivate: false })).toMatchObject({ statusCode: null });
      expect((await postWebhook('http://169.254.169.254/latest/meta-data', '{}', {}, { timeoutMs: 1000, allowPrivate: true })).error).toMatch(/link-local/);
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });
});
