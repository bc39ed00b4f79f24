import { describe, expect, it } from 'vitest';
import { DomainResolution, InfoDomainParams, InfoIpParams, Stix2Bundle, Stix2Params, VpnCreateBody, VpnParams } from './index.ts';

const ok = (schema: { safeParse(v: unknown): { success: boolean } }, value: unknown) => schema.safeParse(value).success;

describe('tools', () => {
  it('path parameters', () => {
    expect(InfoIpParams.parse({ ipv4: '8.8.8.8' })).toEqual({ ipv4: '8.8.8.8' });
    expect(ok(InfoIpParams, { ipv4: '8.8.8' })).toBe(false);
    expect(InfoDomainParams.parse({ domain_name: 'example.com' })).toEqual({ domain_name: 'example.com' });
    expect(ok(InfoDomainParams, { domain_name: 'example' })).toBe(false);
    expect(Stix2Params.parse({ stix2id: '203.0.113.7' })).toEqual({ stix2id: '203.0.113.7' });
    expect(ok(Stix2Params, { stix2id: '' })).toBe(false);
    expect(ok(Stix2Params, { stix2id: 'x'.repeat(2049) })).toBe(false);
  });

  it('responses', () => {
    expect(DomainResolution.parse(['93.184.216.34', '2606:2800:220:1::1'])).toHaveLength(2);
    const bundle = {
      type: 'bundle',
      id: 'bundle--5d0092c5-5f74-4287-9642-33f4c354e56d',
      spec_version: '2.0',
      objects: [{ type: 'indicator', id: 'indicator--8e2e2d2b-17d4-4cbf-938f-98ee46b3cd3f', pattern: "[ipv4-addr:value = '203.0.113.7']" }],
    };
    expect(Stix2Bundle.parse(bundle)).toEqual(bundle);
  });
});

describe('VPN', () => {
  it('create body: account_name required, notes optional, extras stripped', () => {
    expect(VpnCreateBody.parse({ account_name: 'laptop-ada', notes: 'travel', x: 1 })).toEqual({ account_name: 'laptop-ada', notes: 'travel' });
    expect(ok(VpnCreateBody, {})).toBe(false);
    expect(ok(VpnCreateBody, { account_name: '' })).toBe(false);
    expect(ok(VpnCreateBody, { account_name: '   ' })).toBe(false);
    expect(ok(VpnCreateBody, { account_name: 'a'.repeat(257) })).toBe(false);
  });

  it('vid starts with the license prefix', () => {
    expect(VpnParams.parse({ vid: 'RMP-VID-LIC9A1B2C' })).toEqual({ vid: 'RMP-VID-LIC9A1B2C' });
    expect(ok(VpnParams, { vid: 'RMP-VID-9A1B2C' })).toBe(false);
    expect(ok(VpnParams, { vid: 'RMP-VID-LIC9A/../x' })).toBe(false);
  });
});
