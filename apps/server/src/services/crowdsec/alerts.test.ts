import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ApiError, IPV4_SPECIAL_RANGES, parseIpv4, type CrowdsecAlert } from '@rampart/contracts';
import { alertAddress, alertConfidence, alertReport, DEFAULT_SCENARIO_RULE, scenarioRule } from './alerts.ts';

const base: CrowdsecAlert = {
  scenario: 'crowdsecurity/ssh-bf',
  events_count: 6,
  capacity: 5,
  start_at: '2025-03-01T00:00:00Z',
  stop_at: '2025-03-01T00:00:40Z',
  source: { scope: 'Ip', value: '45.77.113.78', ip: '45.77.113.78' },
};

function fails(fn: () => unknown): { path: string; message: string } {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ApiError);
    return (err as ApiError).errors![0]!;
  }
  throw new Error('did not throw');
}

describe('scenario rules', () => {
  it('maps the hub scenarios to the report sources of the same evidence', () => {
    expect(scenarioRule('crowdsecurity/ssh-bf')).toMatchObject({ source: 'ssh_log', severity: 0.8 });
    expect(scenarioRule('crowdsecurity/ssh-slow-bf')).toMatchObject({ source: 'ssh_log', severity: 0.7 });
    expect(scenarioRule('crowdsecurity/ssh-slow-bf_user-enum')).toMatchObject({ source: 'ssh_log', severity: 0.7 });
    expect(scenarioRule('someone/openssh-weird')).toMatchObject({ source: 'ssh_log', severity: 0.7 });
    expect(scenarioRule('crowdsecurity/http-probing')).toMatchObject({ source: 'waf_log', severity: 0.6 });
    expect(scenarioRule('crowdsecurity/nginx-req-limit-exceeded')).toMatchObject({ source: 'waf_log' });
    expect(scenarioRule('crowdsecurity/apache_log4j2_cve-2021-44228')).toMatchObject({ source: 'waf_log' });
    expect(scenarioRule('crowdsecurity/iptables-scan-multi_ports')).toMatchObject({ source: 'packet_filter', severity: 0.6 });
    expect(scenarioRule('crowdsecurity/postfix-spam')).toBe(DEFAULT_SCENARIO_RULE);
  });

  it('gives the severity at the overflow count and more with more events, two decimals in 0.01..0.99', () => {
    expect(alertConfidence(0.8, 6, 5)).toBe(0.8);
    expect(alertConfidence(0.7, 11, 10)).toBe(0.7);
    // 12 events of ssh-bf: two overflows' worth, 1 - 0.2^2.
    expect(alertConfidence(0.8, 12, 5)).toBe(0.96);
    expect(alertConfidence(0.8, 3, 5)).toBe(0.55);
    expect(alertConfidence(0.5, 1, 0)).toBe(0.5);
    expect(alertConfidence(0.5, 1, -1)).toBe(0.5);
    expect(alertConfidence(0.5, 1, undefined)).toBe(0.5);
    expect(alertConfidence(0.8, 1_000_000, 5)).toBe(0.99);
  });

  it('keeps the alert facts in the notes', () => {
    expect(alertReport(base, 'RMP-AGENT-ID-1')).toEqual({
      confidence: 0.8,
      source: 'ssh_log',
      notes: 'crowdsec crowdsecurity/ssh-bf on RMP-AGENT-ID-1: 6 events from 2025-03-01T00:00:00Z to 2025-03-01T00:00:40Z',
    });
  });
});

describe('alert addresses', () => {
  it('takes Ip and Range scopes, from value or else ip / range', () => {
    expect(alertAddress(base, 0)).toEqual({ ip: '45.77.113.78', path: 'body.0.source.value' });
    expect(alertAddress({ ...base, source: { scope: 'ip', value: '', ip: '45.77.113.79' } }, 2)).toEqual({ ip: '45.77.113.79', path: 'body.2.source.ip' });
    expect(alertAddress({ ...base, source: { scope: 'Range', value: '45.77.113.0/24' } }, 1)).toEqual({ ip: '45.77.113.0/24', path: 'body.1.source.value' });
    expect(alertAddress({ ...base, source: { scope: 'Range', value: '', range: '45.77.0.0/16' } }, 1)).toEqual({ ip: '45.77.0.0/16', path: 'body.1.source.range' });
  });

  it('refuses other scopes, IPv6, malformed values and an Ip scope with a prefix, naming the field', () => {
    expect(fails(() => alertAddress({ ...base, source: { scope: 'Country', value: 'FR' } }, 3)).path).toBe('body.3.source.scope');
    expect(fails(() => alertAddress({ ...base, source: { scope: 'Ip', value: '2001:db8::1' } }, 0)).message).toContain('IPv6');
    for (const value of ['45.77.113', '45.77.113.256', '45.77.113.1/33', '045.77.113.1', '45.77.113.0/24']) {
      expect(fails(() => alertAddress({ ...base, source: { scope: 'Ip', value } }, 0)).path).toBe('body.0.source.value');
    }
    expect(fails(() => alertAddress({ ...base, source: { scope: 'Range', value: '45.77.113.0' } }, 0)).message).toContain('CIDR');
    expect(fails(() => alertAddress({ ...base, source: { scope: 'Ip', value: '' } }, 0)).path).toBe('body.0.source.ip');
  });
});

describe('the CrowdSec whitelist shipped for agents (apps/server/crowdsec/rampart-reportable.yaml)', () => {
  it('lists exactly the special-purpose ranges Rampart refuses, and IPv6 sources', () => {
    const text = readFileSync(new URL('../../../crowdsec/rampart-reportable.yaml', import.meta.url), 'utf8');
    const listed = [...text.matchAll(/^ {4}- "(\d+\.\d+\.\d+\.\d+\/\d+)"$/gm)].map((m) => m[1]!);
    const table = IPV4_SPECIAL_RANGES.map((r) => r.cidr);
    // Each listed range is one of the table's; each of the table's lies in a listed one.
    expect(listed.filter((cidr) => !table.includes(cidr))).toEqual([]);
    const covered = (cidr: string) => {
      const r = parseIpv4(cidr)!;
      return listed.some((l) => {
        const w = parseIpv4(l)!;
        return w.start <= r.start && r.end <= w.end;
      });
    };
    expect(table.filter((cidr) => !covered(cidr))).toEqual([]);
    expect(text).toContain(`- "evt.Overflow.Alert.Source.IP contains ':'"`);
  });
});
