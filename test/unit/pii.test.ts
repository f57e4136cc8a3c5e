import { describe, expect, it } from 'vitest';
import { ibanValid, luhnValid, redactPii, redactJson, type PiiKind } from '../../src/governance/pii.js';

/** Text with one finding: the raw value must be gone and its placeholder in its place. */
const POSITIVES: Array<[PiiKind, string, string]> = [
  ['email', 'Write to alice.smith+news@example.co.uk today', 'alice.smith+news@example.co.uk'],
  ['email', 'mail: bob_99@mail-server.example.org.', 'bob_99@mail-server.example.org'],
  ['phone', 'Call me on +44 20 7946 0958 tonight', '+44 20 7946 0958'],
  ['phone', 'my number is +1 (415) 555-0132', '+1 (415) 555-0132'],
  ['phone', 'Handy: +49 151 23456789', '+49 151 23456789'],
  ['phone', 'Tel 0033 6 12 34 56 78 please', '0033 6 12 34 56 78'],
  ['phone', 'US office (415) 555-0132', '(415) 555-0132'],
  ['phone', 'cell 415-555-0132', '415-555-0132'],
  ['phone', 'cell 415.555.0132', '415.555.0132'],
  ['phone', 'London 020 7946 0958', '020 7946 0958'],
  ['phone', 'mobile 07700 900123', '07700 900123'],
  ['phone', 'Paris 06 12 34 56 78', '06 12 34 56 78'],
  ['phone', 'Berlin 030 1234567', '030 1234567'],
  ['phone', 'toll-free 1-800-555-0100 anytime', '1-800-555-0100'],
  ['phone', 'SF office 1 415 555 0132 ask for Sam', '1 415 555 0132'],
  ['phone', 'freephone 0 800 123 4567 now', '0 800 123 4567'],
  ['card', 'Visa 4111 1111 1111 1111 exp 12/29', '4111 1111 1111 1111'],
  ['card', 'card 5555-5555-5555-4444', '5555-5555-5555-4444'],
  ['card', 'amex 378282246310005', '378282246310005'],
  ['card', 'amex 3782 822463 10005 on file', '3782 822463 10005'],
  ['card', 'mc 2221000000000009 new', '2221000000000009'],
  ['iban', 'IBAN DE89 3704 0044 0532 0130 00 thanks', 'DE89 3704 0044 0532 0130 00'],
  ['iban', 'pay GB82WEST12345698765432', 'GB82WEST12345698765432'],
  ['iban', 'FR1420041010050500013M02606 is mine', 'FR1420041010050500013M02606'],
  ['iban', 'fr1420041010050500013m02606 is mine', 'fr1420041010050500013m02606'],
  ['iban', 'iban fr14 2004 1010 0505 0001 3m02 606 is mine', 'fr14 2004 1010 0505 0001 3m02 606'],
  ['ssn', 'SSN 123-45-6789', '123-45-6789'],
  ['ip', 'server at 192.168.10.42 is down', '192.168.10.42'],
  ['ip', 'ip 8.8.8.8.', '8.8.8.8'],
  ['ip', 'v6 2001:db8:85a3::8a2e:370:7334 here', '2001:db8:85a3::8a2e:370:7334'],
  ['ip', 'full fe80:0000:0000:0000:0202:b3ff:fe1e:8329 x', 'fe80:0000:0000:0000:0202:b3ff:fe1e:8329'],
  ['ip', 'listens on ::1 only', '::1'],
  ['ip', 'mapped ::ffff:192.0.2.128 seen', '::ffff:192.0.2.128'],
  ['secret', 'key sk-proj-AbCdEfGhIjKlMnOpQrStUvWx1234567890', 'sk-proj-AbCdEfGhIjKlMnOpQrStUvWx1234567890'],
  ['secret', 'stripe sk_live_51HqLyjWDarjtT1zdp7dcXYZ', 'sk_live_51HqLyjWDarjtT1zdp7dcXYZ'],
  ['secret', 'gh token ghp_1234567890abcdefghijABCDEFGHIJ123456', 'ghp_1234567890abcdefghijABCDEFGHIJ123456'],
  ['secret', 'aws AKIAIOSFODNN7EXAMPLE ok', 'AKIAIOSFODNN7EXAMPLE'],
  ['secret', 'slack xoxb-123456789012-abcdefABCDEF', 'xoxb-123456789012-abcdefABCDEF'],
  ['secret', 'google AIzaSyDaGmWKa4JsXZ-HjGw7ISLn_3namBGewQe', 'AIzaSyDaGmWKa4JsXZ-HjGw7ISLn_3namBGewQe'],
  [
    'secret',
    'jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk4 end',
    'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk4',
  ],
  ['secret', 'Authorization: Bearer abcDEF123456ghiJKL789 sent', 'abcDEF123456ghiJKL789'],
  [
    'secret',
    'here -----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7x\nabc\n-----END RSA PRIVATE KEY----- done',
    'MIIEpAIBAAKCAQEA7x',
  ],
  ['secret', 'token 9fX2kQ7vLmN4pR8sT1wY5zA3bC6dE0gH2jK ok', '9fX2kQ7vLmN4pR8sT1wY5zA3bC6dE0gH2jK'],
  ['secret', 'aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY', 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY'],
  ['secret', 'db password: "s3cr3t-Pa55" in the env', 's3cr3t-Pa55'],
  ['secret', 'blob x/Yz+9kQ7vLmN4pR8sT1wY5zA3bC6dE0gH2jK+/w== end', 'x/Yz+9kQ7vLmN4pR8sT1wY5zA3bC6dE0gH2jK+/w=='],
];

/** Look-alikes that must come out unchanged. */
const NEAR_MISSES: string[] = [
  'Order number 12345678 ships Monday',
  'Order #4111111111111112 failed the checksum',
  'Order number 2024121500001237 ships Monday',
  'Invoice INV-2024-000123 is paid',
  'Meeting on 2024-05-17 at 10:30:00',
  'Born 17/05/1990, moved 05.06.2001',
  'Upgraded to version 1.2.3 and then v2.10.4.1',
  'Node 20.11.1 and Python 3.12',
  'Build 10.0.19041.1 of Windows',
  'Request id 123e4567-e89b-12d3-a456-426614174000',
  'commit 3f786850e387550fdab836ed7e6dc881de23001b',
  'sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
  'The ratio was 3.14159 and the score 98.6',
  'Ticket DE12 is open',
  'I have 3 kids and 2 cats',
  'Room 402, floor 12, building 7',
  'The class is at 12:30 and ends 14:15',
  'C++ uses std::vector and a::b',
  'Product code ABCD-1234-EFGH',
  'My zip code is 94103 and my PIN is not shared',
  'Quantity 1,234,567 units',
  'a-very-long-kebab-case-identifier-for-config-options',
  'The year 2023 had 365 days',
  'Call extension 4412',
  'Temperatures between -10 and 35 degrees',
  'timestamp 1714000000 seconds',
  'My secret: chocolatecake in the fridge',
  'Password rules: twelve characters at least',
  'I scored 1 800 points in 2024',
  'Release 1.800.555 of the firmware',
  'Ticket fr14 2004 1010 is open',
  'Use ffff:: sparingly, and std::map',
  'Order 1 2024121500001237',
];

describe('PII redactor: every positive is replaced by its placeholder', () => {
  it.each(POSITIVES)('%s in %j', (kind, text, raw) => {
    const out = redactPii(text);
    expect(out.kinds).toContain(kind);
    expect(out.text).not.toContain(raw);
    expect(out.text).toContain(`[${kind.toUpperCase()}]`);
  });
});

describe('PII redactor: look-alikes survive', () => {
  it.each(NEAR_MISSES)('%j', (text) => {
    const out = redactPii(text);
    expect(out).toEqual({ text, kinds: [] });
  });
});

/** Findings next to each other: each kind takes exactly its own span, nothing of one is left behind. */
const EXACT: Array<[string, string]> = [
  ['SSN 536-90-4399 2001:db8::beef', 'SSN [SSN] [IP]'],
  ['4111 1111 1111 1111 123-45-6789', '[CARD] [SSN]'],
  ['aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY', 'aws_secret_access_key=[SECRET]'],
  ['at ::ffff:192.0.2.128 and 1 415 555 0132', 'at [IP] and [PHONE]'],
  ['freephone 0 800 123 4567, iban fr14 2004 1010 0505 0001 3m02 606 is mine', 'freephone [PHONE], iban [IBAN] is mine'],
];

describe('PII redactor: adjacent findings keep their own kinds', () => {
  it.each(EXACT)('%j', (text, expected) => {
    expect(redactPii(text).text).toBe(expected);
  });
});

describe('checksums', () => {
  it('Luhn accepts test card numbers and refuses a changed digit', () => {
    expect(luhnValid('4111111111111111')).toBe(true);
    expect(luhnValid('4111111111111112')).toBe(false);
  });
  it('IBAN mod 97 accepts real examples and refuses a changed digit', () => {
    expect(ibanValid('DE89370400440532013000')).toBe(true);
    expect(ibanValid('DE89370400440532013001')).toBe(false);
  });
});

describe('redactJson', () => {
  it('redacts every string value, keeping keys and other values', () => {
    const { value, kinds } = redactJson({ contact: 'bob@example.com', n: 3, tags: ['ip 10.0.0.1'], 'x@y.zz': true });
    expect(value).toEqual({ contact: '[EMAIL]', n: 3, tags: ['ip [IP]'], 'x@y.zz': true });
    expect([...kinds].sort()).toEqual(['email', 'ip']);
  });
});
