#!/usr/bin/env -S npx tsx
/*
 * The dependency audit of CI (`npx tsx scripts/audit.ts`, run by .ci/run). Policy (docs/security.md):
 * `npm audit --omit=dev` over the production dependencies; every advisory of severity high or
 * critical fails the run unless .ci/audit-allow.json has an entry for it that says why it does
 * not apply (and, optionally, until when). An entry that matches nothing found also fails, so
 * the list only holds what is still needed. When the registry's advisory endpoint cannot be
 * reached, the audit was not performed: the script says so on one line beginning
 * "audit NOT PERFORMED" and passes, unless RAMPART_AUDIT_REQUIRED=1, when it fails.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface AllowEntry {
  /** The advisory's URL (https://github.com/advisories/GHSA-…) as npm audit reports it. */
  advisory: string;
  /** The package the advisory is about. */
  package: string;
  /** Why it does not apply to Rampart. */
  reason: string;
  /** YYYY-MM-DD: after this day the entry no longer counts. */
  until?: string;
}

export interface Finding {
  advisory: string;
  package: string;
  severity: string;
  title: string;
}

interface AuditReport {
  vulnerabilities?: Record<string, { via?: Array<string | { url?: string; name?: string; severity?: string; title?: string }> }>;
  error?: { summary?: string; detail?: string };
  message?: string;
}

const BLOCKING = new Set(['high', 'critical']);

/** The high and critical advisories of an `npm audit --json` report, once each. */
export function findings(report: AuditReport): Finding[] {
  const out = new Map<string, Finding>();
  for (const vulnerability of Object.values(report.vulnerabilities ?? {})) {
    for (const via of vulnerability.via ?? []) {
      if (typeof via === 'string' || !via.url || !BLOCKING.has(via.severity ?? '')) continue;
      out.set(via.url, { advisory: via.url, package: via.name ?? '?', severity: via.severity!, title: via.title ?? '' });
    }
  }
  return [...out.values()].sort((a, b) => a.advisory.localeCompare(b.advisory));
}

/** Problems of the allow-list itself: entries without a reason, malformed, or expired on `today`. */
export function allowListProblems(entries: unknown, today: string): string[] {
  if (!Array.isArray(entries)) return ['the allow-list must be a JSON array'];
  const problems: string[] = [];
  entries.forEach((e: Partial<AllowEntry>, i) => {
    const where = `allow-list entry ${i}`;
    if (typeof e !== 'object' || e === null) return void problems.push(`${where}: not an object`);
    for (const key of Object.keys(e)) if (!['advisory', 'package', 'reason', 'until'].includes(key)) problems.push(`${where}: unknown field ${key}`);
    if (typeof e.advisory !== 'string' || !/^https:\/\/github\.com\/advisories\/GHSA-[\w-]+$/.test(e.advisory)) problems.push(`${where}: advisory must be an https://github.com/advisories/GHSA-… URL`);
    if (typeof e.package !== 'string' || e.package === '') problems.push(`${where}: package is required`);
    if (typeof e.reason !== 'string' || e.reason.trim().length < 20) problems.push(`${where}: reason must say why the advisory does not apply (20 characters or more)`);
    if (e.until !== undefined && (typeof e.until !== 'string' || !/^\d{4}-\d{2}-\d{2}$/.test(e.until))) problems.push(`${where}: until must be YYYY-MM-DD`);
    else if (e.until !== undefined && e.until < today) problems.push(`${where}: expired on ${e.until} (${e.advisory})`);
  });
  return problems;
}

export interface Verdict {
  ok: boolean;
  lines: string[];
}

/** The policy applied to one report: what fails and what is allowed, with a line for each. */
export function evaluate(report: AuditReport, allow: AllowEntry[], today: string): Verdict {
  const lines: string[] = [];
  const problems = allowListProblems(allow, today);
  const found = findings(report);
  const blocking: Finding[] = [];
  for (const f of found) {
    const entry = allow.find((a) => a.advisory === f.advisory && a.package === f.package);
    if (entry && !problems.some((p) => p.includes(entry.advisory))) lines.push(`allowed ${f.severity} ${f.package} ${f.advisory}: ${entry.reason}`);
    else blocking.push(f);
  }
  for (const f of blocking) lines.push(`FAIL ${f.severity} ${f.package} ${f.advisory} ${f.title}`);
  const unused = allow.filter((a) => !found.some((f) => f.advisory === a.advisory && f.package === a.package));
  for (const a of unused) problems.push(`allow-list entry for ${a.package} ${a.advisory} matches no finding: remove it`);
  lines.push(...problems.map((p) => `FAIL ${p}`));
  lines.push(`audit: ${found.length} high/critical advisories in production dependencies, ${blocking.length} not allowed`);
  return { ok: blocking.length === 0 && problems.length === 0, lines };
}

/** Why a report is no audit at all (the endpoint refused or was unreachable), or null. */
export function notPerformed(report: AuditReport, exitCode: number | null, stderr: string): string | null {
  if (report.vulnerabilities !== undefined) return null;
  const reason = report.message ?? report.error?.summary ?? (stderr.split('\n').find((l) => l.includes('npm error')) || `npm audit exited ${exitCode}`);
  return reason.trim() || `npm audit exited ${exitCode}`;
}

function main(): void {
  const root = join(dirname(fileURLToPath(import.meta.url)), '..');
  const run = spawnSync('npm', ['audit', '--omit=dev', '--json'], { cwd: root, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  let report: AuditReport = {};
  try {
    report = JSON.parse(run.stdout) as AuditReport;
  } catch {
    report = { message: `npm audit printed no report (exit ${run.status})` };
  }
  const missing = notPerformed(report, run.status, run.stderr);
  if (missing) {
    const required = process.env.RAMPART_AUDIT_REQUIRED === '1';
    console.log(`audit NOT PERFORMED: the registry's advisory endpoint could not be used (${missing}); ${required ? 'failing (RAMPART_AUDIT_REQUIRED=1)' : 'passing, as the policy allows without RAMPART_AUDIT_REQUIRED=1'}`);
    process.exit(required ? 1 : 0);
  }
  const allow = JSON.parse(readFileSync(join(root, '.ci/audit-allow.json'), 'utf8')) as AllowEntry[];
  const verdict = evaluate(report, allow, new Date().toISOString().slice(0, 10));
  for (const line of verdict.lines) console.log(line);
  process.exit(verdict.ok ? 0 : 1);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) main();
