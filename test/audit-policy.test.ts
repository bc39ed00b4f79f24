import { describe, expect, it } from 'vitest';
import { allowListProblems, evaluate, findings, notPerformed } from '../scripts/audit.ts';

/* The CI dependency audit's policy (scripts/audit.ts) on reports shaped as npm audit --json prints them. */

const GHSA_HIGH = 'https://github.com/advisories/GHSA-aaaa-bbbb-cccc';
const GHSA_CRIT = 'https://github.com/advisories/GHSA-dddd-eeee-ffff';
const GHSA_LOW = 'https://github.com/advisories/GHSA-gggg-hhhh-iiii';

const report = {
  vulnerabilities: {
    'left-pad': { via: [{ url: GHSA_HIGH, name: 'left-pad', severity: 'high', title: 'Prototype pollution' }] },
    'uses-left-pad': { via: ['left-pad'] },
    tarball: { via: [{ url: GHSA_CRIT, name: 'tarball', severity: 'critical', title: 'Path traversal' }, { url: GHSA_LOW, name: 'tarball', severity: 'low', title: 'ReDoS' }] },
  },
};
const today = '2026-11-29';
const reason = 'only reachable through the build script, never at run time';

describe('dependency audit policy', () => {
  it('finds each high and critical advisory once, not the low ones or the packages that only depend on them', () => {
    expect(findings(report).map((f) => [f.severity, f.package, f.advisory])).toEqual([
      ['high', 'left-pad', GHSA_HIGH],
      ['critical', 'tarball', GHSA_CRIT],
    ]);
  });

  it('fails on a high or critical advisory the allow-list does not name', () => {
    const v = evaluate(report, [{ advisory: GHSA_HIGH, package: 'left-pad', reason }], today);
    expect(v.ok).toBe(false);
    expect(v.lines).toEqual([
      `allowed high left-pad ${GHSA_HIGH}: ${reason}`,
      `FAIL critical tarball ${GHSA_CRIT} Path traversal`,
      'audit: 2 high/critical advisories in production dependencies, 1 not allowed',
    ]);
  });

  it('passes when every one is allowed with a reason, and on a clean report', () => {
    const allow = [
      { advisory: GHSA_HIGH, package: 'left-pad', reason },
      { advisory: GHSA_CRIT, package: 'tarball', reason, until: '2027-01-31' },
    ];
    expect(evaluate(report, allow, today).ok).toBe(true);
    expect(evaluate({ vulnerabilities: {} }, [], today)).toEqual({ ok: true, lines: ['audit: 0 high/critical advisories in production dependencies, 0 not allowed'] });
  });

  it('refuses entries without a reason, expired, malformed, or matching nothing', () => {
    expect(allowListProblems([{ advisory: GHSA_HIGH, package: 'left-pad', reason: 'n/a' }], today)).toEqual([
      'allow-list entry 0: reason must say why the advisory does not apply (20 characters or more)',
    ]);
    expect(allowListProblems([{ advisory: GHSA_HIGH, package: 'left-pad', reason, until: '2026-01-01' }], today)).toEqual([`allow-list entry 0: expired on 2026-01-01 (${GHSA_HIGH})`]);
    expect(allowListProblems([{ advisory: 'CVE-1', package: 'x', reason, note: 1 }], today)).toEqual([
      'allow-list entry 0: unknown field note',
      'allow-list entry 0: advisory must be an https://github.com/advisories/GHSA-… URL',
    ]);
    expect(allowListProblems({}, today)).toEqual(['the allow-list must be a JSON array']);
    const expired = evaluate(report, [{ advisory: GHSA_HIGH, package: 'left-pad', reason, until: '2026-01-01' }, { advisory: GHSA_CRIT, package: 'tarball', reason }], today);
    expect(expired.ok).toBe(false);
    expect(expired.lines).toContain(`FAIL high left-pad ${GHSA_HIGH} Prototype pollution`);
    const unused = evaluate({ vulnerabilities: {} }, [{ advisory: GHSA_HIGH, package: 'left-pad', reason }], today);
    expect(unused.ok).toBe(false);
    expect(unused.lines[0]).toBe(`FAIL allow-list entry for left-pad ${GHSA_HIGH} matches no finding: remove it`);
  });

  it('tells an audit that was not performed from a clean one', () => {
    expect(notPerformed({ message: '405 Method Not Allowed - POST https://registry.npmjs.org/-/npm/v1/security/advisories/bulk' }, 1, '')).toBe(
      '405 Method Not Allowed - POST https://registry.npmjs.org/-/npm/v1/security/advisories/bulk',
    );
    expect(notPerformed({}, 1, 'npm error audit endpoint returned an error\n')).toBe('npm error audit endpoint returned an error');
    expect(notPerformed({ vulnerabilities: {} }, 0, '')).toBeNull();
  });
});
