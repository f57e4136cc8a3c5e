import { chmodSync, closeSync, existsSync, lstatSync, mkdirSync, openSync, readFileSync, readdirSync, statSync, unlinkSync, writeSync } from 'node:fs';
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

function isAlive(pid: number): boolean {
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
  for (let attempt = 0; ; attempt++) {
    try {
      const fd = openSync(lockPath, 'wx', 0o600);
      writeSync(fd, `${process.pid}\n`);
      closeSync(fd);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const holder = Number.parseInt(readFileSync(lockPath, 'utf8'), 10);
      if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && isAlive(holder)) {
        throw new DataDirInUseError(
          `DATA_DIR ${path.dirname(lockPath)} is in use by process ${holder} (the embedded database serves one process); stop it first, or delete ${lockPath} if no Engram runs there`,
        );
      }
      // Stale (its process is gone) or ours: remove it and take it, once; a racing starter then finds ours.
      if (attempt > 0) throw new DataDirInUseError(`DATA_DIR ${path.dirname(lockPath)}: could not take ${lockPath}`);
      unlinkSync(lockPath);
    }
  }
  const release = () => {
    process.off('exit', release);
    try {
      if (Number.parseInt(readFileSync(lockPath, 'utf8'), 10) === process.pid) unlinkSync(lockPath);
    } catch {
      // already gone
    }
  };
  process.on('exit', release);
  return release;
}
