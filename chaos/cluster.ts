import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, rmSync } from 'node:fs';
import { userInfo, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import postgres from 'postgres';
import { freePort } from '../test/support/process.js';

export { freePort };

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The server binaries: `pg_config --bindir`, else the newest Debian-style versioned directory. */
export function findPgBin(explicit: string | undefined): string {
  if (explicit) return explicit;
  const fromConfig = spawnSync('pg_config', ['--bindir'], { encoding: 'utf8' });
  const dir = fromConfig.status === 0 ? fromConfig.stdout.trim() : '';
  if (dir && existsSync(join(dir, 'initdb'))) return dir;
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).filter((v) => existsSync(join(root, v, 'bin', 'initdb'))) : [];
  versions.sort((a, b) => Number(b) - Number(a));
  if (versions[0]) return join(root, versions[0], 'bin');
  throw new Error('initdb not found: pass --pg-bin <dir with initdb and pg_ctl>');
}

/**
 * A throw-away PostgreSQL cluster on a free port, in a temporary directory: the only server the
 * suite restarts. initdb refuses to run as root, so as root it runs as the `postgres` OS user.
 */
export class PgCluster {
  readonly dataDir: string;
  readonly logFile: string;
  private readonly asRoot = userInfo().uid === 0;

  private constructor(
    readonly bin: string,
    readonly root: string,
    readonly port: number,
  ) {
    this.dataDir = join(root, 'pgdata');
    this.logFile = join(root, 'postgresql.log');
  }

  static async create(bin: string, workDir: string): Promise<PgCluster> {
    const root = join(workDir, 'pg');
    mkdirSync(root);
    const cluster = new PgCluster(bin, root, await freePort());
    if (cluster.asRoot) chownSync(root, ...postgresIds());
    cluster.run('initdb', ['-D', cluster.dataDir, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-sync', '--no-instructions']);
    await cluster.start();
    return cluster;
  }

  private run(tool: string, args: string[]): void {
    const command = join(this.bin, tool);
    const result = this.asRoot
      ? spawnSync('runuser', ['-u', 'postgres', '--', command, ...args], { encoding: 'utf8' })
      : spawnSync(command, args, { encoding: 'utf8' });
    if (result.status !== 0) throw new Error(`${tool} failed (${result.status}): ${result.stderr || result.stdout}`);
  }

  private options(): string {
    // fsync off: the suite never crashes the machine, only the server, and disks here are shared.
    return `-p ${this.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=${this.root} -c max_connections=200 -c fsync=off`;
  }

  async start(): Promise<void> {
    this.run('pg_ctl', ['-D', this.dataDir, '-l', this.logFile, '-w', '-t', '60', '-o', this.options(), 'start']);
  }

  /** `pg_ctl restart -m fast`: every session is cut, the server is back when this returns. */
  async restart(): Promise<void> {
    this.run('pg_ctl', ['-D', this.dataDir, '-l', this.logFile, '-w', '-t', '60', '-m', 'fast', '-o', this.options(), 'restart']);
  }

  stop(): void {
    try {
      this.run('pg_ctl', ['-D', this.dataDir, '-w', '-t', '30', '-m', 'immediate', 'stop']);
    } catch {
      // already down
    }
  }

  url(database: string, user = 'postgres'): string {
    return `postgres://${user}@127.0.0.1:${this.port}/${database}`;
  }

  /** A harness connection, named so backend termination can spare it. */
  admin(database = 'postgres'): postgres.Sql {
    return postgres(this.url(database), { max: 2, onnotice: () => {}, connect_timeout: 3, connection: { application_name: 'engram-chaos' } });
  }
}

function postgresIds(): [number, number] {
  const uid = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' });
  const gid = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' });
  if (uid.status !== 0) throw new Error('running as root needs a `postgres` OS user for initdb');
  return [Number(uid.stdout.trim()), Number(gid.stdout.trim())];
}

/** A redis-server of the suite's own: no persistence, so a restart comes back empty. */
export class RedisServer {
  private child: ChildProcess | undefined;

  private constructor(
    readonly port: number,
    readonly logFile: string,
  ) {}

  static async create(workDir: string, name: string): Promise<RedisServer> {
    const server = new RedisServer(await freePort(), join(workDir, `redis-${name}.log`));
    await server.start();
    return server;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    const log = openSync(this.logFile, 'a');
    this.child = spawn('redis-server', ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'no'], {
      stdio: ['ignore', log, log],
    });
    let spawnError: Error | undefined;
    this.child.once('error', (error) => (spawnError = error));
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      if (spawnError) throw new Error(`cannot run redis-server (${spawnError.message}): install Redis ≥ 6`);
      const client = new Redis(this.url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      client.on('error', () => {});
      try {
        await client.connect();
        await client.ping();
        return;
      } catch {
        await sleep(50);
      } finally {
        client.disconnect();
      }
    }
    throw new Error(`redis-server did not start on ${this.port}; see ${this.logFile}`);
  }

  /** SIGKILL: everything it held is gone. */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }
}

export function makeWorkDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'engram-chaos-'));
  chmodSync(dir, 0o755); // the postgres OS user must reach its data directory inside
  return dir;
}

export function removeWorkDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}
