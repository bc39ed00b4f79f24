import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { connect } from 'node:net';
import { join } from 'node:path';
import { startNginx, systemGate, waitFor } from '@rampart/plugin-kit/testing';
import type { NginxInstance } from '@rampart/plugin-kit/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WafParser } from './parser.ts';

const MODULE = '/usr/share/nginx/modules/ngx_http_modsecurity_module.so';

/** Skips locally (printing why) and fails under CI when nginx or its ModSecurity module is missing. */
function gate(): boolean {
  if (systemGate('waf_log against nginx + ModSecurity', { commands: ['nginx'] })) return true;
  if (existsSync(MODULE)) return false;
  if (process.env.CI) throw new Error(`waf_log against nginx: cannot run under CI: ${MODULE} missing`);
  console.warn(`[skip] waf_log against nginx: ${MODULE} missing (apt-get install libnginx-mod-http-modsecurity)`);
  return true;
}

const RULES = `SecRuleEngine On
SecAuditEngine RelevantOnly
SecAuditLogRelevantStatus "^(?:5|4(?!04))"
SecAuditLogParts ABHZ
SecAuditLogType Serial
SecAuditLogFormat JSON
SecAuditLog {dir}/logs/audit.json
SecRule ARGS:attack "@streq yes" "id:1001,phase:1,deny,status:403,log,msg:'rampart test attack'"
`;

/** One request from a chosen loopback address (each behaviour gets its own client address). */
function get(port: number, from: string, path: string, headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, localAddress: from, agent: false, headers }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Bytes that are not HTTP: nginx answers 400 and logs the line in the access log. */
function garbage(port: number, from: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, localAddress: from }, () => socket.end('HELP\r\n\r\n'));
    socket.on('error', reject);
    socket.on('close', () => resolve());
    socket.resume();
  });
}

function detected(text: string): string[] {
  const parser = new WafParser('normal');
  const found = text.split('\n').flatMap((line) => parser.push(line, Date.now() / 1000));
  return [...new Set(found.map((d) => `${d.ip} ${d.kind}`))].sort();
}

describe.skipIf(gate())('waf_log against a real nginx with libmodsecurity', () => {
  let server: NginxInstance;
  beforeAll(async () => {
    server = await startNginx(
      `limit_req_zone $binary_remote_addr zone=one:1m rate=1r/m;
      server {
        listen 127.0.0.1:{port};
        access_log {dir}/logs/access.log combined;
        error_log {dir}/logs/site-error.log info;
        root {dir}/www;
        modsecurity on;
        modsecurity_rules_file {dir}/rules.conf;
        location /private/ { auth_basic "rampart"; auth_basic_user_file {dir}/htpasswd; }
        location /limited/ { limit_req zone=one nodelay; }
      }`,
      { main: `load_module ${MODULE};`, files: { 'rules.conf': RULES, htpasswd: 'alice:{PLAIN}right\n' } },
    );
    for (const d of ['www', 'www/private', 'www/limited']) await mkdir(join(server.dir, d), { recursive: true });
    for (const f of ['www/index.html', 'www/private/index.html', 'www/limited/index.html']) await writeFile(join(server.dir, f), 'ok\n');
  });
  afterAll(() => server?.stop());

  it('finds each hostile client in the error, access and audit logs, and nothing for a clean one', async () => {
    const { port } = server;
    expect(await get(port, '127.0.0.6', '/')).toBe(200);
    expect(await get(port, '127.0.0.2', '/?attack=yes')).toBe(403);
    expect(await get(port, '127.0.0.3', '/private/', { authorization: `Basic ${Buffer.from('alice:wrong').toString('base64')}` })).toBe(401);
    expect(await get(port, '127.0.0.4', '/phpmyadmin/scripts/setup.php')).toBe(404);
    expect(await get(port, '127.0.0.5', '/limited/')).toBe(200);
    expect(await get(port, '127.0.0.5', '/limited/')).toBe(503);
    await garbage(port, '127.0.0.7');

    const read = (name: string) => readFile(join(server.dir, 'logs', name), 'utf8').catch(() => '');
    const want = {
      error: ['127.0.0.2 modsec_block', '127.0.0.3 http_auth_failure', '127.0.0.4 bot_search', '127.0.0.5 rate_limited'],
      access: ['127.0.0.4 bot_search', '127.0.0.7 bad_request'],
      audit: ['127.0.0.2 modsec_block'],
    };
    const got = async () => ({ error: detected(await read('site-error.log')), access: detected(await read('access.log')), audit: detected(await read('audit.json')) });
    await waitFor(async () => JSON.stringify(await got()) === JSON.stringify(want), 'the log lines of every request').catch(() => undefined);
    expect(await got()).toEqual(want);
  });
});
