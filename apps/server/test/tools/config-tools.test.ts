import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.ts';

const problems = (env: Record<string, string>): string[] => {
  try {
    loadConfig(env);
    return [];
  } catch (err) {
    return (err as ConfigError).problems;
  }
};

describe('tools and VPN configuration', () => {
  it('has working defaults: system resolver, a /24 pool, VPN not configured', () => {
    expect(loadConfig({}).tools).toEqual({
      dns: { servers: undefined, timeoutMs: 2000, tries: 2, reverse: true, reverseTimeoutMs: 500 },
      cdnRefreshSources: undefined,
      vpn: { pool: '10.99.0.0/24', endpoint: undefined, serverPublicKey: undefined, dns: [], allowedIps: ['0.0.0.0/0', '::/0'], keepaliveSeconds: 25, keySecret: undefined },
    });
  });

  it('reads every variable', () => {
    const tools = loadConfig({
      DNS_SERVERS: '127.0.0.1:5353, 9.9.9.9,[::1]:53',
      DNS_TIMEOUT_MS: '300',
      DNS_TRIES: '1',
      REVERSE_DNS: 'no',
      REVERSE_DNS_TIMEOUT_MS: '100',
      CDN_REFRESH_SOURCES: '{"Fastly":[{"url":"http://127.0.0.1:1/x","format":"fastly"}]}',
      VPN_POOL: '10.8.0.0/16',
      VPN_ENDPOINT: 'vpn.example.org:51820',
      VPN_SERVER_PUBLIC_KEY: 'yOtPbGBdDdGa5eCcKo2oFe2lOHp0C0aF6eWxoJ8NEBI=',
      VPN_DNS: '10.8.0.1',
      VPN_ALLOWED_IPS: '10.0.0.0/8',
      VPN_KEEPALIVE_SECONDS: '0',
      VPN_KEY_SECRET: 'sixteen-chars-ok',
    }).tools;
    expect(tools).toEqual({
      dns: { servers: ['127.0.0.1:5353', '9.9.9.9', '[::1]:53'], timeoutMs: 300, tries: 1, reverse: false, reverseTimeoutMs: 100 },
      cdnRefreshSources: { Fastly: [{ url: 'http://127.0.0.1:1/x', format: 'fastly' }] },
      vpn: { pool: '10.8.0.0/16', endpoint: 'vpn.example.org:51820', serverPublicKey: 'yOtPbGBdDdGa5eCcKo2oFe2lOHp0C0aF6eWxoJ8NEBI=', dns: ['10.8.0.1'], allowedIps: ['10.0.0.0/8'], keepaliveSeconds: 0, keySecret: 'sixteen-chars-ok' },
    });
  });

  it('refuses malformed values, naming each variable', () => {
    expect(problems({ DNS_SERVERS: '127.0.0.1:5353,resolver.local' })).toEqual(['DNS_SERVERS.1: each entry must be an IP address, optionally with :port']);
    expect(problems({ VPN_POOL: '10.0.0.0/8' })).toEqual(['VPN_POOL: prefix length must be 16 to 30']);
    expect(problems({ VPN_POOL: '10.0.0.0/31' })).toEqual(['VPN_POOL: prefix length must be 16 to 30']);
    expect(problems({ VPN_SERVER_PUBLIC_KEY: 'not-a-key' })).toEqual(['VPN_SERVER_PUBLIC_KEY: a WireGuard public key (44 characters of base64)']);
    expect(problems({ VPN_ENDPOINT: 'vpn.example.org' })).toEqual(['VPN_ENDPOINT: host:port']);
    expect(problems({ DNS_TIMEOUT_MS: '10' })[0]).toMatch(/^DNS_TIMEOUT_MS: /);
    expect(problems({ CDN_REFRESH_SOURCES: '{' })).toEqual(['CDN_REFRESH_SOURCES: must be JSON']);
  });
});
