import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

/** The package root (nearest folder with package.json), whether run from src/ or compiled dist/. */
function packageRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!existsSync(path.join(dir, 'package.json'))) {
    const parent = path.dirname(dir);
    if (parent === dir) return process.cwd();
    dir = parent;
  }
  return dir;
}

export const PACKAGE_ROOT = packageRoot();
export const MIGRATIONS_FOLDER = path.join(PACKAGE_ROOT, 'drizzle');
