/** Writes openapi.yaml from the routes' declarations (`npm run openapi`); see src/http/routing.ts. */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { PACKAGE_ROOT } from '../src/db/paths.js';
import { openApiYaml } from '../src/http/openapi.js';

const target = path.join(PACKAGE_ROOT, 'openapi.yaml');
writeFileSync(target, openApiYaml());
console.log(`wrote ${path.relative(process.cwd(), target) || target}`);
