/**
 * `npm run bench -- redact [--mb 8] [--runs 5]`: throughput of the PII redactor over transcript
 * text, message by message as the extract route redacts it at the door. The corpus is generated
 * (seeded): ordinary chat sentences with, in about one message of ten, an e-mail, a phone number,
 * a card, an IBAN, an IP or a key; plus digit-heavy and token-heavy messages (order numbers,
 * dates, versions, hashes, UUIDs), which make the detectors work hardest. Prints per run the
 * MB/s of wall time and of this process's CPU time (on a machine shared with other work the
 * wall figure measures the contention too), and the medians.
 */
import { redactPii } from '../src/governance/pii.js';

const args = process.argv.slice(2);
const option = (name: string, fallback: number) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && args[i + 1] ? Number(args[i + 1]) : fallback;
};
const targetMb = option('mb', 8);
const runs = option('runs', 5);

let seed = 42;
const random = () => {
  seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
  return seed / 2 ** 31;
};
const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;

const SENTENCES = [
  'I just moved to Berlin and I am still looking for a good bakery near the office.',
  'Can you help me plan a trip to Rome in May? We want to see the Colosseum and eat well.',
  'My daughter starts school next week, so mornings will be busy for a while.',
  'I prefer short answers with bullet points, and please no emojis in the summaries.',
  'The meeting moved to 2024-05-17 at 10:30, room 402, building 7.',
  'We upgraded the cluster to version 1.29.3 and Node 20.11.1 last night.',
  'Order 88412973 shipped on Monday; invoice INV-2024-000123 is paid.',
  'The commit 3f786850e387550fdab836ed7e6dc881de23001b fixed the flaky test.',
  'Request id 123e4567-e89b-12d3-a456-426614174000 failed with a timeout after 30 seconds.',
  'I am allergic to peanuts and I try to avoid gluten when I can.',
  'Sure, that sounds great, thanks a lot for the quick reply!',
  'Temperatures were between -10 and 35 degrees over the year, ratio 3.14159.',
];
const PII = [
  'You can reach me at maria.rossi@example.com any time.',
  'My number is +44 20 7946 0958 if you need it.',
  'The card ending in the usual is 4111 1111 1111 1111.',
  'Pay to DE89 3704 0044 0532 0130 00 please.',
  'The server sits at 192.168.10.42 behind the proxy.',
  'Here is the key sk-proj-AbCdEfGhIjKlMnOpQrStUvWx1234567890, rotate it later.',
  'Token: eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk4',
];

const messages: string[] = [];
let bytes = 0;
while (bytes < targetMb * 1_000_000) {
  const parts: string[] = [];
  const n = 1 + Math.floor(random() * 6);
  for (let i = 0; i < n; i++) parts.push(random() < 0.1 ? pick(PII) : pick(SENTENCES));
  const message = parts.join(' ');
  messages.push(message);
  bytes += Buffer.byteLength(message);
}

let found = 0;
const wallRates: number[] = [];
const cpuRates: number[] = [];
const mb = bytes / 1_000_000;
for (let run = 0; run < runs; run++) {
  const started = performance.now();
  const cpuBefore = process.cpuUsage();
  found = 0;
  for (const message of messages) found += redactPii(message).kinds.length;
  const cpu = process.cpuUsage(cpuBefore);
  const seconds = (performance.now() - started) / 1000;
  const cpuSeconds = (cpu.user + cpu.system) / 1e6;
  wallRates.push(mb / seconds);
  cpuRates.push(mb / cpuSeconds);
  process.stdout.write(
    `run ${run + 1}: ${mb.toFixed(1)} MB in ${seconds.toFixed(3)} s wall (${(mb / seconds).toFixed(1)} MB/s), ${cpuSeconds.toFixed(3)} s CPU (${(mb / cpuSeconds).toFixed(1)} MB/s)\n`,
  );
}
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
process.stdout.write(
  `redact: ${messages.length} messages, ${mb.toFixed(1)} MB, ${found} findings; median ${median(wallRates).toFixed(1)} MB/s wall, ${median(cpuRates).toFixed(1)} MB/s CPU (one core)\n`,
);
