import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { UnsafeDataDirError, ensureDataDir, tightenDataDir } from '../../src/db/data-dir.js';

/** DATA_DIR holds the embedded database and the generated secrets: the owner's alone. */
const made: string[] = [];
function scratch(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'engram-datadir-'));
  made.push(dir);
  return dir;
}
const modeOf = (p: string) => statSync(p).mode & 0o777;

afterEach(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('ensureDataDir', () => {
  it('creates a missing DATA_DIR, and the folders leading to it, with mode 0700', () => {
    const dir = path.join(scratch(), 'nested', 'data');
    ensureDataDir(dir);
    expect(modeOf(dir)).toBe(0o700);
    expect(modeOf(path.dirname(dir))).toBe(0o700);
  });

  it('tightens an existing DATA_DIR that others may read to 0700', () => {
    const dir = path.join(scratch(), 'data');
    mkdirSync(dir);
    chmodSync(dir, 0o755);
    ensureDataDir(dir);
    expect(modeOf(dir)).toBe(0o700);
  });

  it.each(['777', '775', '757', '1777'])('refuses a DATA_DIR other users can write (mode %s), with one line naming it', (octal) => {
    const mode = Number.parseInt(octal, 8);
    const dir = path.join(scratch(), 'data');
    mkdirSync(dir);
    chmodSync(dir, mode);
    let error: unknown;
    try {
      ensureDataDir(dir);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(UnsafeDataDirError);
    const message = (error as Error).message;
    expect(message).toContain(`DATA_DIR ${dir} is writable by other users`);
    expect(message).not.toContain('\n');
    // Refused, not silently repaired: what others could have planted there is not trusted.
    expect(modeOf(dir)).toBe(mode & 0o777);
  });

  it('refuses a DATA_DIR that is a file', () => {
    const file = path.join(scratch(), 'data');
    writeFileSync(file, '');
    expect(() => ensureDataDir(file)).toThrow(/is not a directory/);
  });
});

describe('tightenDataDir', () => {
  it('makes every file 0600 and every folder 0700, however deep, and leaves symbolic links and their targets alone', () => {
    const root = scratch();
    const dir = path.join(root, 'data');
    mkdirSync(path.join(dir, 'pg', 'base', '5'), { recursive: true });
    for (const folder of [dir, path.join(dir, 'pg'), path.join(dir, 'pg', 'base'), path.join(dir, 'pg', 'base', '5')]) chmodSync(folder, 0o755);
    const files = [path.join(dir, 'dev-jwt-secret'), path.join(dir, 'pg', 'PG_VERSION'), path.join(dir, 'pg', 'base', '5', '16384')];
    for (const file of files) {
      writeFileSync(file, 'memory text');
      chmodSync(file, 0o666);
    }
    const outside = path.join(root, 'outside');
    writeFileSync(outside, '');
    chmodSync(outside, 0o644);
    symlinkSync(outside, path.join(dir, 'pg', 'link'));

    tightenDataDir(dir);

    for (const file of files) expect({ file, mode: modeOf(file) }).toEqual({ file, mode: 0o600 });
    for (const folder of [dir, path.join(dir, 'pg'), path.join(dir, 'pg', 'base', '5')]) expect({ folder, mode: modeOf(folder) }).toEqual({ folder, mode: 0o700 });
    expect(modeOf(outside)).toBe(0o644);
  });
});
