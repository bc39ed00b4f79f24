import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineEnforcer, enforcerKinds, type Enforcer } from './enforcer.ts';
import { enforcerByBackend } from './backend-switch.ts';
import { silentLogger } from './testing/loggers.ts';

const made: string[] = [];
const backend = (name: string) =>
  defineEnforcer({
    name,
    serves: 'packet_filter',
    configSchema: z.strictObject({ active: z.boolean(), options: z.strictObject({ backend: z.literal(name).default(name as never), size: z.number().default(1) }).prefault({}) }),
    create: async (config) => {
      made.push(`${name}:${config.options.size}`);
      return { capacity: config.options.size } as unknown as Enforcer;
    },
  });

describe('enforcerByBackend', () => {
  const sw = enforcerByBackend('packet_filter', { nftables: backend('nftables'), ipset: backend('ipset') }, 'nftables');
  const silentCtx = { log: silentLogger };

  it('routes by options.backend, defaulting when it is absent', async () => {
    await sw.create(sw.configSchema.parse({ active: true }), silentCtx);
    await sw.create(sw.configSchema.parse({ active: true, options: { backend: 'ipset', size: 7 } }), silentCtx);
    expect(made).toEqual(['nftables:1', 'ipset:7']);
    expect(sw.serves).toBe('packet_filter');
  });

  it("reports the chosen backend's issues at their paths, and an unknown backend", () => {
    const bad = sw.configSchema.safeParse({ active: 'yes', options: { backend: 'ipset', size: 'x' } });
    expect(bad.error!.issues.map((i) => i.path.join('.')).sort()).toEqual(['active', 'options.size']);
    const unknown = sw.configSchema.safeParse({ active: true, options: { backend: 'pf' } });
    expect(unknown.error!.issues).toMatchObject([{ path: ['options', 'backend'], message: 'unknown backend; known: ipset, nftables' }]);
  });

  it('takes the option key it routes by (router_a: options.dialect)', async () => {
    const dialect = (name: string) =>
      defineEnforcer({
        name,
        serves: 'router_a',
        configSchema: z.strictObject({ active: z.boolean(), options: z.strictObject({ dialect: z.literal(name).default(name as never) }).prefault({}) }),
        create: async () => {
          made.push(`dialect:${name}`);
          return {} as unknown as Enforcer;
        },
      });
    const router = enforcerByBackend('router_a', { routeros: dialect('routeros'), ios: dialect('ios') }, 'routeros', 'dialect');
    await router.create(router.configSchema.parse({ active: true }), silentCtx);
    await router.create(router.configSchema.parse({ active: true, options: { dialect: 'ios' } }), silentCtx);
    expect(made.slice(-2)).toEqual(['dialect:routeros', 'dialect:ios']);
    expect(router.configSchema.safeParse({ active: true, options: { dialect: 'junos' } }).error!.issues).toMatchObject([
      { path: ['options', 'dialect'], message: 'unknown dialect; known: ios, routeros' },
    ]);
    expect(router.kinds).toEqual(['ipv4']);
    expect(enforcerKinds(router, router.configSchema.parse({ active: true }))).toEqual(['ipv4']);
    // The other switch's key means nothing here: the chosen plugin refuses it as an unknown key.
    expect(router.configSchema.safeParse({ active: true, options: { backend: 'ios' } }).success).toBe(false);
  });

  it("enforces the chosen plugin's kinds (dns_e: domains in either dialect)", () => {
    const dns = (name: string, kinds: ('domain' | 'url')[]) =>
      defineEnforcer({
        name,
        serves: 'dns_e',
        configSchema: z.strictObject({ active: z.boolean(), options: z.strictObject({ dialect: z.literal(name).default(name as never) }).prefault({}) }),
        kinds,
        kindsOf: () => kinds,
        create: async () => ({}) as unknown as Enforcer,
      });
    const sw = enforcerByBackend('dns_e', { bind: dns('bind', ['domain']), other: dns('other', ['domain', 'url']) }, 'bind', 'dialect');
    expect(sw.kinds).toEqual(['domain', 'url']);
    expect(enforcerKinds(sw, sw.configSchema.parse({ active: true }))).toEqual(['domain']);
    expect(enforcerKinds(sw, sw.configSchema.parse({ active: true, options: { dialect: 'other' } }))).toEqual(['domain', 'url']);
  });
});
