import { describe, expect, it } from 'vitest';
import { FailPolicy } from './policy.ts';
import type { Detection } from './source.ts';

const d = (ts: number, ip = '203.0.113.7', kind = 'auth_failure', attempts = 1): Detection => ({ ts, ip, source: 'ssh_log', kind, attempts });

describe('FailPolicy', () => {
  it('reports at max_retry within find_time, with confidence and notes', () => {
    const p = new FailPolicy({ max_retry: 3, find_time_seconds: 60 });
    expect(p.push(d(0))).toBeUndefined();
    expect(p.push(d(10, '203.0.113.7', 'invalid_user'))).toBeUndefined();
    // 1 - (0.4 * 0.2 * 0.4)^(1/3) = 1 - 0.3175
    expect(p.push(d(20))).toEqual({ ip: '203.0.113.7', confidence: 0.68, source: 'ssh_log', notes: '3 ssh_log attempts in 20s: auth_failure x2, invalid_user x1', ts: 20 });
  });

  it('does not count attempts older than the window', () => {
    const p = new FailPolicy({ max_retry: 3, find_time_seconds: 60 });
    p.push(d(0));
    p.push(d(30));
    expect(p.push(d(61))).toBeUndefined(); // the one at 0 fell out
    expect(p.push(d(62))?.ts).toBe(62);
  });

  it('reports an address once per window, then counts afresh', () => {
    const p = new FailPolicy({ max_retry: 2, find_time_seconds: 100 });
    p.push(d(0));
    expect(p.push(d(1))?.ts).toBe(1);
    for (let t = 2; t < 101; t += 10) expect(p.push(d(t))).toBeUndefined();
    expect(p.push(d(101))).toBeUndefined();
    expect(p.push(d(102))?.ts).toBe(102);
  });

  it('keeps addresses apart and reports one port scan (one attempt of weight 5) at the default max_retry', () => {
    const p = new FailPolicy({ max_retry: 5, find_time_seconds: 600 });
    expect(p.push(d(0, '198.51.100.1'))).toBeUndefined();
    const scan = p.push(d(5, '198.51.100.2', 'port_scan', 1));
    expect(scan).toMatchObject({ ip: '198.51.100.2', notes: '1 ssh_log attempts in 0s: port_scan x1' });
    // severity 0.7 at the threshold: 1 - 0.3^(1·5/5) = 0.7; a second scan in a later window: 1 - 0.3^2
    expect(scan?.confidence).toBe(0.7);
    expect(p.push(d(700, '198.51.100.2', 'port_scan', 1))?.confidence).toBe(0.91);
  });

  it('raises confidence with severity overrides and bounds tracked addresses', () => {
    const p = new FailPolicy({ max_retry: 1, find_time_seconds: 10, severity: { auth_failure: 1 }, max_tracked: 2 });
    expect(p.push(d(0, '192.0.2.1'))?.confidence).toBe(1);
    p.push(d(0, '192.0.2.2'));
    p.push(d(0, '192.0.2.3'));
    expect(p.tracked).toBe(2);
    // 192.0.2.1 was forgotten (least recently seen), so its quiet window went with it.
    expect(p.push(d(1, '192.0.2.1'))?.ip).toBe('192.0.2.1');
    p.prune(100);
    expect(p.tracked).toBe(0);
  });

  it('counts nothing for a detection of an attempt already counted (attempts 0)', () => {
    const p = new FailPolicy({ max_retry: 2, find_time_seconds: 60 });
    expect(p.push(d(0))).toBeUndefined();
    expect(p.push(d(1, '203.0.113.7', 'invalid_user', 0))).toBeUndefined();
    expect(p.push(d(2))).toMatchObject({ notes: '2 ssh_log attempts in 2s: auth_failure x2' });
  });

  it('weighs pre-auth disconnects and scans by kind, not as failures', () => {
    const p = new FailPolicy({ max_retry: 2, find_time_seconds: 60, weight: { scan: 0.5 } });
    // preauth_disconnect weighs 0.25 by default: four of them and one failure make 2.
    for (let t = 0; t < 4; t++) expect(p.push(d(t, '203.0.113.7', 'preauth_disconnect'))).toBeUndefined();
    expect(p.push(d(4))).toMatchObject({ notes: '5 ssh_log attempts in 4s: preauth_disconnect x4, auth_failure x1' });
    expect(p.push(d(0, '203.0.113.8', 'scan', 3))).toBeUndefined();
    expect(p.push(d(1, '203.0.113.8', 'scan'))?.ts).toBe(1);
  });

  it('raises confidence with the attempts seen from an address, earlier windows included', () => {
    const p = new FailPolicy({ max_retry: 5, find_time_seconds: 60 });
    const reports = [];
    for (let t = 0; t < 200; t += 5) {
      const r = p.push(d(t));
      if (r) reports.push(r.confidence);
    }
    // At the threshold (t 20) the severity of the kind, 0.6; then 1 - 0.4^(n/5) with the attempts
    // of the quiet window counted: 21 attempts at t 100, 37 at t 180.
    expect(reports).toEqual([0.6, 0.98, 1]);
  });

  it('rejects invalid options', () => {
    expect(() => new FailPolicy({ max_retry: 0 })).toThrow();
  });
});
