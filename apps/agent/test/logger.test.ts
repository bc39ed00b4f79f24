import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../src/runtime/logger.ts';

describe('agent logger', () => {
  it('writes JSON lines with every secret of a settings document redacted, at any depth', () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const log = createLogger('info', sink);
    log.info(
      {
        settings: { api_jwt_key: 'jwt-secret', ips: { cdn_waf: { cdn_waf_x_auth_key: 'cf-secret' }, router_a: { router_password: 'pw-secret' } } },
        headers: { authorization: 'key-secret' },
      },
      'settings changed',
    );
    const text = lines.join('');
    for (const secret of ['jwt-secret', 'cf-secret', 'pw-secret', 'key-secret']) expect(text).not.toContain(secret);
    const entry = JSON.parse(text) as { msg: string; settings: { api_jwt_key: string; ips: { cdn_waf: { cdn_waf_x_auth_key: string } } } };
    expect(entry.msg).toBe('settings changed');
    expect(entry.settings.api_jwt_key).toBe('[redacted]');
    expect(entry.settings.ips.cdn_waf.cdn_waf_x_auth_key).toBe('[redacted]');
  });
});
