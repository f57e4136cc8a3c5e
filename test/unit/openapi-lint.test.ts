/**
 * The generated document passes the two linters tools and users run on OpenAPI documents:
 * Redocly's recommended rules (redocly.yaml) and Spectral's `spectral:oas` (.spectral.yaml), with
 * no error and no warning. A rule is switched off only in those files, with its reason.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PACKAGE_ROOT } from '../../src/db/paths.js';
import { openApiYaml } from '../../src/http/openapi.js';

const run = promisify(execFile);
const bin = (name: string) => path.join(PACKAGE_ROOT, 'node_modules', '.bin', name);

let dir: string;
let file: string;
beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'engram-oas-lint-'));
  file = path.join(dir, 'openapi.yaml');
  writeFileSync(file, openApiYaml());
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The command's output whether it exits 0 or not (a linter exits 1 on findings). */
async function output(command: string, args: string[]): Promise<string> {
  try {
    return (await run(command, args, { cwd: PACKAGE_ROOT, maxBuffer: 16 * 1024 * 1024, env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' } })).stdout;
  } catch (error) {
    return String((error as { stdout?: unknown }).stdout ?? error);
  }
}

describe('the generated openapi.yaml lints clean', () => {
  it('Redocly (recommended): 0 errors, 0 warnings', async () => {
    const report = JSON.parse(await output(bin('redocly'), ['lint', file, '--config', path.join(PACKAGE_ROOT, 'redocly.yaml'), '--format', 'json'])) as {
      totals: { errors: number; warnings: number };
      problems: Array<{ ruleId: string; message: string }>;
    };
    expect(report.problems.map((p) => `${p.ruleId}: ${p.message}`)).toEqual([]);
    expect(report.totals).toMatchObject({ errors: 0, warnings: 0 });
  }, 120_000);

  it('Spectral (spectral:oas): 0 errors, 0 warnings', async () => {
    const findings = JSON.parse(await output(bin('spectral'), ['lint', file, '--ruleset', path.join(PACKAGE_ROOT, '.spectral.yaml'), '--format', 'json', '--quiet'])) as Array<{
      code: string;
      message: string;
      severity: number;
    }>;
    // Severity 0 is an error, 1 a warning; hints and infos are not findings.
    expect(findings.filter((f) => f.severity <= 1).map((f) => `${f.code}: ${f.message}`)).toEqual([]);
  }, 120_000);
});
