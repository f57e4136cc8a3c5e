import { execFileSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { PACKAGE_ROOT } from '../../src/db/paths.js';

const CLIENT = path.join(PACKAGE_ROOT, 'clients/typescript');

/**
 * @engram/client's tests import the built package (its dist/, through its exports), so a run
 * rebuilds it first when openapi.yaml or the client's sources are newer than the build.
 */
export default function setup(): void {
  const built = statSync(path.join(CLIENT, 'dist/index.js'), { throwIfNoEntry: false })?.mtimeMs ?? 0;
  const sources = [
    path.join(PACKAGE_ROOT, 'openapi.yaml'),
    path.join(CLIENT, 'package.json'),
    path.join(CLIENT, 'tsconfig.json'),
    ...readdirSync(path.join(CLIENT, 'src'), { withFileTypes: true })
      .filter((entry) => entry.isFile())
      .map((entry) => path.join(CLIENT, 'src', entry.name)),
  ];
  if (sources.every((file) => statSync(file).mtimeMs <= built)) return;
  execFileSync('npm', ['run', 'build', '--workspace', '@engram/client'], { cwd: PACKAGE_ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
}
