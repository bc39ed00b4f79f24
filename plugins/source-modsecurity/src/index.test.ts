import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { WafParser, WafSourceConfig, wafLogPaths } from './index.ts';

process.env.TZ = 'UTC';
const readAt = Date.parse('2024-06-01T00:00:00Z') / 1000;

describe('modsecurity source config', () => {
  it('parses the README sample config, whose options are the defaults', async () => {
    const readme = await readFile(fileURLToPath(new URL('../README.md', import.meta.url)), 'utf8');
    const sample = /## Sample config[\s\S]*?```json\n([\s\S]*?)```/.exec(readme)?.[1];
    const parsed = WafSourceConfig.parse(JSON.parse(sample!));
    expect(parsed).toEqual(WafSourceConfig.parse({ active: true, waf_logs: parsed.waf_logs }));
    expect(wafLogPaths(parsed.waf_logs)).toEqual(['/var/log/nginx/error.log', '/var/log/nginx/access.log', '/var/log/modsec_audit.json']);
  });

  it('names the failing fields', () => {
    const r = WafSourceConfig.safeParse({ active: true, waf_logs: ' , ', options: { mode: 'x' } });
    expect(r.error!.issues.map((i) => `${i.path.join('.')}: ${i.message}`)).toEqual([
      'waf_logs: at least one log file path is required',
      'options.mode: Invalid option: expected one of "normal"|"aggressive"',
    ]);
  });
});

describe('WafParser formats beyond the fail2ban samples', () => {
  it('reads libmodsecurity 3 and ModSecurity 2 JSON audit records', () => {
    const v3 = JSON.stringify({
      transaction: {
        client_ip: '203.0.113.9', time_stamp: 'Sat Jun  1 10:00:00 2024', client_port: 5555,
        request: { method: 'GET', uri: '/?q=<script>' }, response: { http_code: 403 },
        messages: [{ message: 'XSS Attack Detected', details: { ruleId: '941100', severity: '2' } }],
      },
    });
    const v2 = JSON.stringify({
      transaction: { time: '01/Jun/2024:10:00:01 +0200', remote_address: '2001:DB8::7' },
      response: { status: 406 }, audit_data: { messages: ['Access denied with code 406 (phase 2).'] },
    });
    const allowed = JSON.stringify({ transaction: { client_ip: '198.51.100.1', time_stamp: 'Sat Jun  1 10:00:02 2024', response: { http_code: 200 }, messages: [{ message: 'x' }] } });
    const normal = new WafParser('normal');
    expect([v3, v2, allowed].flatMap((l) => normal.push(l, readAt))).toEqual([
      { ts: Date.parse('2024-06-01T10:00:00Z') / 1000, ip: '203.0.113.9', source: 'waf_log', kind: 'modsec_block', attempts: 1 },
      { ts: Date.parse('2024-06-01T08:00:01Z') / 1000, ip: '2001:db8::7', source: 'waf_log', kind: 'modsec_block', attempts: 1 },
    ]);
    expect(new WafParser('aggressive').push(allowed, readAt)).toMatchObject([{ ip: '198.51.100.1', kind: 'modsec_alert' }]);
  });

  it('counts one attempt per transaction, however many rule messages it logs', () => {
    const message = (id: string, what: string) =>
      `[Mon Dec 23 13:12:31 2013] [error] [client 192.0.2.9] ModSecurity: ${what} [file "/etc/crs.conf"] [id "942100"] [hostname "h"] [uri "/"] [unique_id "${id}"]`;
    const lines = [
      message('tx-1', 'Warning. detected SQLi using libinjection.'),
      message('tx-1', 'Warning. Pattern match "union select".'),
      message('tx-1', 'Access denied with code 403 (phase 2). Inbound Anomaly Score Exceeded.'),
      message('tx-2', 'Access denied with code 403 (phase 2). Inbound Anomaly Score Exceeded.'),
      `[Mon Dec 23 13:12:32 2013] [error] [client 192.0.2.9] ModSecurity: Access denied with code 403 (phase 2). no id`,
    ];
    const out = (mode: 'normal' | 'aggressive') => {
      const p = new WafParser(mode);
      return lines.flatMap((l) => p.push(l, readAt)).map((d) => `${d.kind} ${d.attempts}`);
    };
    expect(out('aggressive')).toEqual(['modsec_alert 1', 'modsec_alert 0', 'modsec_block 0', 'modsec_block 1', 'modsec_block 1']);
    expect(out('normal')).toEqual(['modsec_block 1', 'modsec_block 1', 'modsec_block 1']);
    const audit = (id: string) => JSON.stringify({ transaction: { client_ip: '203.0.113.9', unique_id: id, response: { http_code: 403 }, messages: [{ message: 'x' }] } });
    const p = new WafParser('normal');
    expect([audit('a'), audit('a'), audit('b')].flatMap((l) => p.push(l, readAt)).map((d) => d.attempts)).toEqual([1, 0, 1]);
  });

  it('counts one attempt per request for messages without unique_id or without [client …]', () => {
    // libmodsecurity's nginx connector (lines as nginx writes them), less the unique_id tag.
    const nginx = (second: number, conn: number, what: string, request = 'GET /?q=union+select HTTP/1.1', client = '[client 192.0.2.44] ') =>
      `2024/06/01 10:00:0${second} [error] 12#12: *${conn} ${client}ModSecurity: ${what} [file "/etc/crs.conf"] [id "942100"] [hostname "h"] [uri "/"], client: 192.0.2.44, server: _, request: "${request}", host: "h"`;
    const warning = 'Warning. detected SQLi using libinjection.';
    const denied = 'Access denied with code 403 (phase 2). Inbound Anomaly Score Exceeded.';
    const lines = [
      nginx(1, 7, warning),
      nginx(1, 7, 'Warning. Pattern match "union select".'),
      nginx(1, 7, denied),
      nginx(1, 9, denied), // another connection: another request
      nginx(2, 7, denied), // the same connection a second later: the next request
      nginx(3, 7, warning, 'GET /?id=1+or+1=1 HTTP/1.1', ''),
      nginx(3, 7, denied, 'GET /?id=1+or+1=1 HTTP/1.1', ''),
      // Text the client chose (a matched value) cannot name another address: the suffix is read from the end.
      nginx(4, 7, `${denied} Matched "Operator \`Rx' against ARGS:a (Value: \`x, client: 203.0.113.66, server: y, request: "GET / HTTP/1.1", host: "h"' )`, 'GET /?a=1 HTTP/1.1', ''),
    ];
    const out = (mode: 'normal' | 'aggressive') => {
      const p = new WafParser(mode);
      return lines.flatMap((l) => p.push(l, readAt)).map((d) => `${d.ip} ${d.kind} ${d.attempts}`);
    };
    expect(out('aggressive')).toEqual([
      '192.0.2.44 modsec_alert 1',
      '192.0.2.44 modsec_alert 0',
      '192.0.2.44 modsec_block 0',
      '192.0.2.44 modsec_block 1',
      '192.0.2.44 modsec_block 1',
      '192.0.2.44 modsec_alert 1',
      '192.0.2.44 modsec_block 0',
      '192.0.2.44 modsec_block 1',
    ]);
    expect(out('normal').map((d) => Number(d.split(' ')[2]))).toEqual([1, 1, 1, 1, 1]);
    // Apache (ModSecurity 2 without mod_unique_id): the worker thread and the [uri] tag.
    const apache = (tid: number, what: string) =>
      `[Sat May 09 00:35:52.389262 2020] [security2:error] [pid 4242:tid ${tid}] [client 192.0.2.9:55555] ModSecurity: ${what} [file "/etc/crs.conf"] [id "949110"] [hostname "h"] [uri "/login.php"]`;
    const p = new WafParser('aggressive');
    expect([apache(1, warning), apache(1, denied), apache(2, denied)].flatMap((l) => p.push(l, readAt)).map((d) => `${d.ip} ${d.kind} ${d.attempts}`)).toEqual([
      '192.0.2.9 modsec_alert 1',
      '192.0.2.9 modsec_block 0',
      '192.0.2.9 modsec_block 1',
    ]);
  });

  it('reads a message with many tags and no denial without backtracking for ever', () => {
    // 60 tags: fail2ban's pattern would try 2^60 ways before giving up (the test would time out).
    const tags = '[id "1"] '.repeat(60);
    const p = new WafParser('normal');
    expect(p.push(`[Mon Dec 23 13:12:31 2013] [error] [client 192.0.2.9] ModSecurity: ${tags}Warning. Pattern match`, readAt)).toEqual([]);
    expect(p.push(`[Mon Dec 23 13:12:31 2013] [error] [client 192.0.2.9] ModSecurity: ${tags}Access denied with code 403 (phase 2).`, readAt)).toMatchObject([{ ip: '192.0.2.9', kind: 'modsec_block' }]);
  });

  it('reads nginx connector messages and syslog-wrapped nginx lines', () => {
    const p = new WafParser('normal');
    const line =
      '2024/06/01 10:00:03 [error] 12#12: *7 [client 192.0.2.44] ModSecurity: Access denied with code 403 (phase 2). Matched "Operator `Eq\' with parameter `0\'" [file "/etc/x.conf"] [id "949110"] [msg "Inbound Anomaly Score Exceeded"], client: 192.0.2.44, server: _, request: "GET /?a=1 HTTP/1.1", host: "h"';
    expect(p.push(line, readAt)).toMatchObject([{ ip: '192.0.2.44', kind: 'modsec_block', ts: Date.parse('2024-06-01T10:00:03Z') / 1000 }]);
    const wrapped = 'Jun  1 10:00:04 web nginx: 2024/06/01 10:00:04 [error] 12#12: *8 limiting requests, excess: 2.000 by zone "one", client: 192.0.2.45, server: x, request: "GET / HTTP/1.1", host: "h"';
    expect(p.push(wrapped, readAt)).toMatchObject([{ ip: '192.0.2.45', kind: 'rate_limited' }]);
    expect(p.push('Jun  1 10:00:05 web sshd[1]: limiting requests, excess: 2 by zone "one", client: 192.0.2.46,', readAt)).toEqual([]);
    expect(p.stats()).toEqual({ lines: 3, detections: 2, hostNames: 0 });
  });
});
