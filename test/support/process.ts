import { spawn, type ChildProcess } from 'node:child_process';
import { connect, createServer } from 'node:net';
import { PACKAGE_ROOT } from '../../src/db/paths.js';

/** A port nothing listens on right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (address && typeof address === 'object' ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

export interface ServiceProcess {
  child: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
}

/** Runs one of the package's entry points (`src/main.ts`, `workers/extraction.ts`) as a real process. */
export function runEntry(entry: string, env: Record<string, string | undefined>, args: string[] = []): ServiceProcess {
  return runNode(['--import', 'tsx', entry, ...args], env);
}

/** Runs this Node with the given arguments (flags, then the script and its arguments) in the package's folder. */
export function runNode(argv: string[], env: Record<string, string | undefined>): ServiceProcess {
  const child = spawn(process.execPath, argv, {
    cwd: PACKAGE_ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

/** Polls a URL until it answers `status`, or fails with what the process printed. */
export async function waitForStatus(url: string, status: number, proc: ServiceProcess, timeoutMs = 60_000): Promise<number> {
  const started = Date.now();
  while (Date.now() - started < timeoutMs) {
    if (proc.child.exitCode !== null) throw new Error(`process exited (${proc.child.exitCode}) before ${url} answered:\n${proc.output()}`);
    try {
      const res = await fetch(url);
      if (res.status === status) return Date.now() - started;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${url} did not answer ${status} within ${timeoutMs} ms:\n${proc.output()}`);
}

export async function stop(proc: ServiceProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
  if (proc.child.exitCode === null && proc.child.signalCode === null) proc.child.kill(signal);
  return proc.exited;
}

/** Sends bytes as a client wrote them (however malformed); resolves with the answer once the server closes. */
export function rawHttp(port: number, request: string): Promise<{ status: number; headers: string; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(request));
    let text = '';
    socket.on('data', (d: Buffer) => (text += d.toString()));
    socket.on('error', reject);
    socket.on('close', () => {
      const [head = '', body = ''] = text.split('\r\n\r\n', 2);
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]), headers: head.toLowerCase(), body });
    });
  });
}
