import { chmodSync, existsSync, lstatSync, mkdirSync, readdirSync, statSync } from 'node:fs';
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
