import { spawn, type ChildProcess } from 'node:child_process';
import { openSync, closeSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { PACKAGE_ROOT } from '../src/db/paths.js';
import { sleep } from './cluster.js';

export interface ExitRecord {
  at: number;
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The harness sent the signal that ended it (a fault, or the scenario's teardown). */
  expected: boolean;
}

/**
 * One API or worker process, run as `node --import tsx <entry>` (what `npm start` / `npm run
 * worker` run, without npm in between, so a signal reaches the service itself). It plays its own
 * orchestrator: a process that dies without the harness asking is counted as a crash and started
 * again a second later, as a container would be; one the harness kills is restarted by the
 * scenario when it chooses.
 */
export class ServiceProcess {
  private child: ChildProcess | undefined;
  private expectExit = false;
  private stopped = false;
  readonly exits: ExitRecord[] = [];
  readonly logFile: string;

  constructor(
    readonly name: string,
    private readonly entry: string,
    private readonly env: Record<string, string>,
    /** Where it answers GET /healthz once it is up (the API's port, or the worker's metrics port). */
    readonly healthPort: number,
    workDir: string,
  ) {
    this.logFile = join(workDir, `${name}.log`);
  }

  get crashes(): ExitRecord[] {
    return this.exits.filter((e) => !e.expected);
  }

  /** Torn down by the scenario's end: a start that fails now is no news. */
  get retired(): boolean {
    return this.stopped;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Starts the process and waits until /healthz answers 200. */
  async start(timeoutMs = 180_000): Promise<void> {
    this.stopped = false;
    this.expectExit = false;
    const log = openSync(this.logFile, 'a');
    writeSync(log, `\n--- chaos: starting ${this.name} at ${new Date().toISOString()}\n`);
    const child = spawn(process.execPath, ['--import', 'tsx', this.entry], {
      cwd: PACKAGE_ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...this.env },
      stdio: ['ignore', log, log],
    });
    closeSync(log);
    this.child = child;
    child.once('exit', (code, signal) => {
      const expected = this.expectExit;
      this.exits.push({ at: Date.now(), code, signal, expected });
      if (!expected && !this.stopped) {
        // A crash: restart it like a supervisor would (its jobs are then up to the service).
        setTimeout(() => {
          if (!this.stopped && !this.running) this.start().catch(() => {});
        }, 1000);
      }
    });
    await this.waitHealthy(timeoutMs);
  }

  async waitHealthy(timeoutMs = 180_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (!this.running) throw new Error(`${this.name} exited while starting; see ${this.logFile}`);
      try {
        const res = await fetch(`http://127.0.0.1:${this.healthPort}/healthz`, { signal: AbortSignal.timeout(1000) });
        if (res.status === 200) return;
      } catch {
        // not listening yet
      }
      await sleep(100);
    }
    throw new Error(`${this.name} did not become healthy within ${timeoutMs} ms; see ${this.logFile}`);
  }

  /** Sends a signal the harness means (a fault, or teardown); resolves when the process is gone. */
  async kill(signal: NodeJS.Signals): Promise<ExitRecord | undefined> {
    const child = this.child;
    if (!child || !this.running) return undefined;
    this.expectExit = true;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill(signal);
    await exited;
    return this.exits.at(-1);
  }

  /** Teardown: SIGTERM, then SIGKILL after 15 s; no restart afterwards. */
  async stop(): Promise<void> {
    this.stopped = true;
    const child = this.child;
    if (!child || !this.running) return;
    this.expectExit = true;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    await exited;
    clearTimeout(timer);
  }
}
