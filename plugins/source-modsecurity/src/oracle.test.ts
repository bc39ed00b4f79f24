// fail2ban's sample timestamps are Europe/Berlin local time; set before any Date use.
process.env.TZ = 'Europe/Berlin';

import { canonicalIp } from '@rampart/plugin-kit';
import type { DetectionMode } from '@rampart/plugin-kit';
import { oracleTime, readFail2banOracle, sharedGate, sharedPath } from '@rampart/plugin-kit/testing';
import { describe, expect, it } from 'vitest';
import { WafParser } from './parser.ts';

const DIR = sharedPath('oracles/fail2ban');
const SKIP = sharedGate('waf_log fail2ban oracle', 'oracles/fail2ban');
const FILES = ['apache-modsecurity', 'nginx-http-auth', 'nginx-botsearch', 'nginx-bad-request', 'nginx-limit-req'];
const READ_AT = Date.parse('2021-01-01T00:00:00') / 1000;

/** fail2ban's `auth` is nginx-http-auth's normal; its `fallback` is part of our aggressive mode. */
function modesOf(options: Record<string, string>[]): DetectionMode[] {
  const modes = new Set<DetectionMode>();
  for (const o of options) modes.add(o.mode === 'aggressive' || o.mode === 'fallback' ? 'aggressive' : 'normal');
  return [...modes];
}

const counts: Record<string, { mode: DetectionMode; matchTrue: number; matchFalse: number }[]> = {};

describe.skipIf(SKIP)('waf_log against fail2ban 1.0.2 samples', () => {
  for (const file of SKIP ? [] : FILES) {
    readFail2banOracle(`${DIR}/${file}`).forEach((section, i) => {
      for (const mode of modesOf(section.options)) {
        it(`${file} section ${i + 1} in ${mode} mode`, () => {
          const parser = new WafParser(mode);
          const problems: string[] = [];
          const c = { mode, matchTrue: 0, matchFalse: 0 };
          (counts[file] ??= []).push(c);
          for (const { lineNo, line, entry } of section.lines) {
            const got = parser.push(line, READ_AT);
            if (!entry?.match) {
              c.matchFalse++;
              if (got.length > 0) problems.push(`${lineNo}: expected nothing, got ${JSON.stringify(got)}`);
              continue;
            }
            c.matchTrue++;
            const want = { ip: canonicalIp(entry.host!), ts: oracleTime(entry.time!) };
            const have = got.length === 1 ? { ip: got[0]!.ip, ts: Math.floor(got[0]!.ts) } : got;
            if (JSON.stringify(have) !== JSON.stringify(want)) problems.push(`${lineNo}: want ${JSON.stringify(want)}, got ${JSON.stringify(got)}`);
          }
          expect(problems).toEqual([]);
        });
      }
    });
  }

  it('reports the counts', () => {
    console.log(`waf_log oracle counts: ${JSON.stringify(counts)}`);
    const total = Object.values(counts).flat().reduce((n, c) => n + c.matchTrue, 0);
    // Every `match: true` entry of the five files (apache 4, http-auth 6+3+2, botsearch 12, bad-request 8, limit-req 4).
    expect(total).toBe(39);
  });
});
