import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, linkSync, lstatSync, mkdirSync, readFileSync, readdirSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/**
 * DATA_DIR holds the embedded database (memory text in plain form, in its WAL too) and the
 * generated secrets: it is the owner's alone. Mode bits mean nothing on Windows, so there the
 * checks are skipped.
 */
const POSIX = process.platform !== 'win32';

export class UnsafeDataDirError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnsafeDataDirError';
  }
}

/**
 * Creates DATA_DIR with mode 0700, or checks an existing one: refuses a folder another user owns
 * or can write (anything in it could have been planted or swapped), and tightens its own to 0700.
 */
export function ensureDataDir(dir: string): string {
  const resolved = path.resolve(dir);
  if (!existsSync(resolved)) mkdirSync(resolved, { recursive: true, mode: 0o700 });
  const stat = statSync(resolved);
  if (!stat.isDirectory()) throw new UnsafeDataDirError(`DATA_DIR ${resolved} is not a directory`);
  if (!POSIX) return resolved;
  const uid = process.getuid?.();
  if (uid !== undefined && uid !== 0 && stat.uid !== uid) {
    throw new UnsafeDataDirError(`DATA_DIR ${resolved} belongs to another user (uid ${stat.uid}); use a folder of your own`);
  }
  if ((stat.mode & 0o022) !== 0) {
    throw new UnsafeDataDirError(
      `DATA_DIR ${resolved} is writable by other users (mode ${(stat.mode & 0o777).toString(8)}); run \`chmod 700 ${resolved}\` or choose another folder`,
    );
  }
  if ((stat.mode & 0o777) !== 0o700) chmodSync(resolved, 0o700);
  return resolved;
}

/**
 * Folders 0700 and files 0600 under `dir`, e.g. a data directory that PGlite initialised with
 * files 0666, or one an older version left readable. Symbolic links are left alone (chmod would
 * follow them out of the folder).
 */
export function tightenDataDir(dir: string): void {
  if (!POSIX) return;
  const pending = [path.resolve(dir)];
  while (pending.length > 0) {
    const current = pending.pop()!;
    const stat = lstatSync(current);
    if (stat.isSymbolicLink()) continue;
    const wanted = stat.isDirectory() ? 0o700 : 0o600;
    if ((stat.mode & 0o777) !== wanted) chmodSync(current, wanted);
    if (stat.isDirectory()) for (const name of readdirSync(current)) pending.push(path.join(current, name));
  }
}

export class DataDirInUseError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DataDirInUseError';
  }
}

/** The lock's file name in DATA_DIR: it holds the pid of the one process serving the folder. */
export const DATA_DIR_LOCK = 'engram.lock';

function readPid(file: string): number | undefined {
  try {
    const pid = Number.parseInt(readFileSync(file, 'utf8'), 10);
    return Number.isInteger(pid) && pid > 0 ? pid : 0;
  } catch {
    return undefined;
  }
}

function isAlive(pid: number): boolean {
  if (pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists, under another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Takes DATA_DIR for this process alone. PGlite is one process's database: a second process on
 * the same folder starts without error, sees only its own writes, and one side's acknowledged
 * writes are gone after a restart. A lock left by a process that died (kill -9) is taken over.
 * Returns the release, which removes the lock if it is still this process's.
 */
export function lockDataDir(dir: string): () => void {
  const lockPath = path.join(path.resolve(dir), DATA_DIR_LOCK);
  // Written whole under a name of its own, then linked into place: a racer never reads a lock
  // without its pid, and link() fails if one is there.
  const mine = `${lockPath}.${process.pid}.${randomBytes(6).toString('hex')}`;
  writeFileSync(mine, `${process.pid}\n`, { mode: 0o600 });
  try {
    for (let attempt = 0; ; attempt++) {
      try {
        linkSync(mine, lockPath);
        break;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      const holder = readPid(lockPath);
      if (holder === undefined) continue; // taken away meanwhile: try again
      if (holder !== process.pid && isAlive(holder)) {
        throw new DataDirInUseError(
          `DATA_DIR ${path.dirname(lockPath)} is in use by process ${holder} (the embedded database serves one process); stop it first, or delete ${lockPath} if no Engram runs there`,
        );
      }
      if (attempt > 8) throw new DataDirInUseError(`DATA_DIR ${path.dirname(lockPath)}: could not take ${lockPath}`);
      // Stale: moved aside under a name of our own (only one racer's rename finds it). If what we
      // moved was not the stale lock but a racer's fresh one, it goes back before we try again.
      const aside = `${lockPath}.stale.${randomBytes(6).toString('hex')}`;
      try {
        renameSync(lockPath, aside);
      } catch {
        continue;
      }
      if (readPid(aside) !== holder) {
        try {
          linkSync(aside, lockPath);
        } catch {
          // a third process holds it now; the next round reads whose it is
        }
      }
      unlinkSync(aside);
    }
  } finally {
    unlinkSync(mine);
  }
  const release = () => {
    process.off('exit', release);
    try {
      if (readPid(lockPath) === process.pid) unlinkSync(lockPath);
    } catch {
      // already gone
    }
  };
  process.on('exit', release);
  return release;
}
