import { lookup } from 'node:dns/promises';
import { isIP, type LookupFunction } from 'node:net';

/**
 * Where a webhook may connect. Link-local (cloud metadata lives there) and unroutable addresses
 * are always refused; private and loopback ones only when the operator allows them
 * (WEBHOOK_ALLOW_PRIVATE), for receivers on the same network.
 */
export type AddressClass = 'public' | 'private' | 'loopback' | 'link_local' | 'unroutable';

export class WebhookUrlError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WebhookUrlError';
  }
}

type Range = readonly [bigint, number, AddressClass];

function v4ToBigInt(address: string): bigint {
  return address.split('.').reduce((acc, part) => (acc << 8n) | BigInt(Number(part)), 0n);
}

/** 128-bit value of an IPv6 address (with an embedded dotted quad, e.g. ::ffff:1.2.3.4). */
function v6ToBigInt(address: string): bigint {
  let text = address.toLowerCase().split('%')[0]!;
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const v4 = v4ToBigInt(dotted[1]!);
    text = `${text.slice(0, -dotted[1]!.length)}${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`;
  }
  const [head, tail] = text.includes('::') ? text.split('::') : [text, undefined];
  const headParts = head ? head.split(':') : [];
  const tailParts = tail ? tail.split(':') : [];
  const missing = 8 - headParts.length - tailParts.length;
  const parts = [...headParts, ...Array<string>(tail === undefined ? 0 : missing).fill('0'), ...tailParts];
  return parts.reduce((acc, part) => (acc << 16n) | BigInt(parseInt(part || '0', 16)), 0n);
}

const V4: Range[] = [
  [v4ToBigInt('0.0.0.0'), 8, 'loopback'], // "this host": connecting to 0.0.0.0 reaches the local machine
  [v4ToBigInt('10.0.0.0'), 8, 'private'],
  [v4ToBigInt('100.64.0.0'), 10, 'private'],
  [v4ToBigInt('127.0.0.0'), 8, 'loopback'],
  [v4ToBigInt('169.254.0.0'), 16, 'link_local'],
  [v4ToBigInt('172.16.0.0'), 12, 'private'],
  [v4ToBigInt('192.0.0.0'), 24, 'private'],
  [v4ToBigInt('192.168.0.0'), 16, 'private'],
  [v4ToBigInt('198.18.0.0'), 15, 'private'],
  [v4ToBigInt('224.0.0.0'), 4, 'unroutable'],
  [v4ToBigInt('240.0.0.0'), 4, 'unroutable'],
];

const V6: Range[] = [
  [0n, 128, 'unroutable'], // ::
  [1n, 128, 'loopback'], // ::1
  [v6ToBigInt('fe80::'), 10, 'link_local'],
  [v6ToBigInt('fec0::'), 10, 'private'], // site-local (deprecated)
  [v6ToBigInt('fc00::'), 7, 'private'], // unique local (AWS's fd00:ec2::254 metadata among them: refused unless allowed)
  [v6ToBigInt('ff00::'), 8, 'unroutable'],
];

function inRange(value: bigint, bits: number, [base, prefix]: Range): boolean {
  const shift = BigInt(bits - prefix);
  return value >> shift === base >> shift;
}

/** The IPv4 address an IPv6 one stands for: v4-mapped, v4-compatible, NAT64 (RFC 6052) and 6to4. */
function embeddedV4(value: bigint): bigint | undefined {
  if (value >> 32n === 0xffffn) return value & 0xffffffffn; // ::ffff:a.b.c.d
  if (value >> 32n === 0n && value > 1n) return value; // ::a.b.c.d
  if (value >> 32n === v6ToBigInt('64:ff9b::') >> 32n) return value & 0xffffffffn;
  if (value >> 112n === 0x2002n) return (value >> 80n) & 0xffffffffn; // 2002:AABB:CCDD::/48
  return undefined;
}

function classifyV4(value: bigint): AddressClass {
  return V4.find((range) => inRange(value, 32, range))?.[2] ?? 'public';
}

export function classifyAddress(address: string): AddressClass {
  const family = isIP(address.split('%')[0]!);
  if (family === 4) return classifyV4(v4ToBigInt(address));
  if (family !== 6) return 'unroutable';
  const value = v6ToBigInt(address);
  const v4 = embeddedV4(value);
  if (v4 !== undefined) return classifyV4(v4);
  return V6.find((range) => inRange(value, 128, range))?.[2] ?? 'public';
}

/** Why an address may not be connected to, or undefined when it may. */
export function refusal(address: string, allowPrivate: boolean): string | undefined {
  const kind = classifyAddress(address);
  if (kind === 'public') return undefined;
  if (kind === 'link_local') return 'resolves to a link-local address, which is never allowed';
  if (kind === 'unroutable') return 'resolves to an address that is not a unicast address';
  if (allowPrivate) return undefined;
  return `resolves to a ${kind} address (allowed only with WEBHOOK_ALLOW_PRIVATE=true)`;
}

/** The URL's syntax and scheme; the host's addresses are checked by checkWebhookTarget. */
export function parseWebhookUrl(raw: string, allowPrivate: boolean): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new WebhookUrlError('must be an absolute URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new WebhookUrlError('must be an https:// URL');
  if (url.protocol === 'http:' && !allowPrivate) throw new WebhookUrlError('must be https:// (http:// only with WEBHOOK_ALLOW_PRIVATE=true)');
  if (url.username || url.password) throw new WebhookUrlError('must not carry credentials');
  return url;
}

function hostOf(url: URL): string {
  return url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
}

/** Checks the URL and every address its host resolves to now (at creation, and before each delivery). */
export async function checkWebhookTarget(raw: string, allowPrivate: boolean): Promise<URL> {
  const url = parseWebhookUrl(raw, allowPrivate);
  const host = hostOf(url);
  let addresses: string[];
  if (isIP(host)) addresses = [host];
  else {
    try {
      addresses = (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);
    } catch {
      throw new WebhookUrlError('must name a host that resolves');
    }
  }
  for (const address of addresses) {
    const reason = refusal(address, allowPrivate);
    if (reason) throw new WebhookUrlError(reason);
  }
  return url;
}

/**
 * A `lookup` for node's http(s).request that refuses forbidden addresses at connect time: the
 * address checked is the address connected to, so DNS rebinding between check and use fails.
 */
export function guardedLookup(allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    lookup(hostname, { all: true, verbatim: true }).then(
      (all) => {
        const family = typeof options === 'object' && options.family ? options.family : 0;
        const candidates = all.filter((a) => family === 0 || a.family === family);
        const bad = candidates.map((a) => refusal(a.address, allowPrivate)).find(Boolean);
        if (bad || candidates.length === 0) {
          callback(Object.assign(new WebhookUrlError(bad ?? 'no address'), { code: 'EWEBHOOKADDRESS' }), '', 4);
          return;
        }
        if (typeof options === 'object' && options.all) (callback as unknown as (e: null, a: typeof candidates) => void)(null, candidates);
        else callback(null, candidates[0]!.address, candidates[0]!.family);
      },
      (error: NodeJS.ErrnoException) => callback(error, '', 4),
    );
  };
}
