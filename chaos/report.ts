import type { RunSettings, ScenarioResult } from './runner.js';

const seconds = (ms: number | undefined, never: string) => (ms === undefined ? never : (ms / 1000).toFixed(1));

/** A Markdown table (pastes into an issue as is), then each scenario's notes and failures. */
export function renderTable(results: readonly ScenarioResult[], settings: RunSettings): string {
  const header = [
    'scenario',
    'accepted',
    'succeeded',
    'failed',
    'stuck',
    'missing',
    'dup',
    '5xx',
    '503 retried',
    'conn err (unexp.)',
    'timeouts',
    'crashes',
    'slowest s',
    'recovery s',
    'drain s',
    'verdict',
  ];
  const rows = results.map((r) => r.error !== undefined ? [r.name, ...header.slice(1, -1).map(() => '-'), 'NOT RUN'] : [
    r.name,
    `${r.accepted}/${r.planned}`,
    r.succeeded,
    r.failed,
    r.stuck,
    r.missing,
    r.duplicated,
    r.serverErrors,
    r.retried503,
    `${r.connectionErrors} (${r.unexpectedConnectionErrors})`,
    r.timeouts,
    r.crashes,
    seconds(r.slowestMs, '-'),
    seconds(r.recoveryMs, 'never'),
    seconds(r.drainMs, 'stuck'),
    r.failures.length === 0 ? 'PASS' : 'FAIL',
  ]);
  const lines = [
    `| ${header.join(' | ')} |`,
    `|${header.map(() => '---').join('|')}|`,
    ...rows.map((row) => `| ${row.join(' | ')} |`),
    '',
    `jobs ${settings.jobs} per scenario, ${settings.rate}/s, ${settings.parallel} in flight; stuck after ${settings.stuckAfterMs / 1000} s; ` +
      `service env: ${Object.entries(settings.serviceEnv).map(([k, v]) => `${k}=${v}`).join(' ')}`,
  ];
  for (const r of results) {
    if (r.notes.length === 0 && r.failures.length === 0) continue;
    lines.push(`- ${r.name}: ${[...r.notes, ...r.failures.map((f) => `FAIL: ${f}`)].join('; ')}`);
  }
  return lines.join('\n');
}
