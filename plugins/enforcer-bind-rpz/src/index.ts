import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { IpsEntries } from '@rampart/contracts';
import { codecOf, createFileListEnforcer, defineEnforcer, parseDomainList, readDomainListFile, runShell, type BlockEntry, type ListFileFormat } from '@rampart/plugin-kit';

const domainCodec = codecOf('domain');
const ipv4Codec = codecOf('ipv4');

/** What a listed name answers: NXDOMAIN, NODATA, no answer at all, or a walled-garden name. */
const Action = z.union([z.enum(['nxdomain', 'nodata', 'drop']), z.string().refine((v) => domainCodec.canonical(v) !== undefined, { message: "nxdomain, nodata, drop or a walled-garden domain name" })]);

const BindRpzOptions = z
  .strictObject({
    dialect: z.literal('bind').default('bind').describe('dns_e dialect this plugin implements (infoblox: @rampart/enforcer-infoblox-rpz)'),
    zone: z
      .string()
      .min(1)
      .max(253)
      .regex(/^[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*\.?$/, { message: 'a DNS zone name such as rpz.local' })
      .default('rpz.local')
      .describe("The response policy zone's name, as named.conf's zone and response-policy statements name it"),
    action: Action.default('nxdomain').describe("What a listed name and its sub-domains answer: nxdomain (CNAME .), nodata (CNAME *.), drop (CNAME rpz-drop.) or a walled-garden domain name"),
    reload_command: z.string().max(4096).optional().describe("Run after each change of the zone file; default 'rndc reload <zone>'"),
    reload_timeout_seconds: z.number().int().min(1).max(600).default(60),
    max_entries: z.number().int().min(1).max(10_000_000).default(1_000_000).describe('Names the zone may hold'),
    passthru: z.array(z.string().max(253)).max(100_000).default([]).describe('Names never rewritten (rpz-passthru.), in addition to domains_file_whitelist'),
    ttl: z.number().int().min(0).max(86_400).default(60).describe('TTL of the zone records, seconds'),
    ip_triggers: z
      .strictObject({
        zone: z
          .string()
          .min(1)
          .max(253)
          .regex(/^[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*\.?$/, { message: 'a DNS zone name such as rpz-ip.local' })
          .describe("The second response policy zone's name (named.conf lists it in response-policy)"),
        file: z.string().min(1).max(4096).describe('Its zone file, which the agent writes'),
        reload_command: z.string().max(4096).optional().describe("Run after each change; default 'rndc reload <zone>'"),
      })
      .optional()
      .describe("Blocked IPv4 addresses and networks as rpz-ip triggers: any answer that resolves into them gets the action. Off when absent"),
  })
  .default({ dialect: 'bind', zone: 'rpz.local', action: 'nxdomain', reload_timeout_seconds: 60, max_entries: 1_000_000, passthru: [], ttl: 60 });

export const BindRpzConfig = IpsEntries.dns_e.extend({ options: BindRpzOptions }).superRefine((cfg, ctx) => {
  if (cfg.active && !cfg.domains_file) ctx.addIssue({ code: 'custom', path: ['domains_file'], message: 'the RPZ zone file path is required when active' });
  if (cfg.domains_file && cfg.domains_file === cfg.domains_file_whitelist)
    ctx.addIssue({ code: 'custom', path: ['domains_file_whitelist'], message: 'the whitelist is read, the zone file written: they must differ' });
  if (cfg.options.ip_triggers && [cfg.domains_file, cfg.domains_file_whitelist].includes(cfg.options.ip_triggers.file))
    ctx.addIssue({ code: 'custom', path: ['options', 'ip_triggers', 'file'], message: 'the rpz-ip zone needs a file of its own' });
  cfg.options.passthru.forEach((name, i) => {
    if (!domainCodec.canonical(name)) ctx.addIssue({ code: 'custom', path: ['options', 'passthru', i], message: 'not a domain name' });
  });
});
export type BindRpzConfig = z.infer<typeof BindRpzConfig>;

/** The CNAME target of each action (appliances.md, "DNS response policy zones"). */
export function actionTarget(action: string): string {
  if (action === 'nxdomain') return '.';
  if (action === 'nodata') return '*.';
  if (action === 'drop') return 'rpz-drop.';
  return `${domainCodec.canonical(action)}.`;
}

/** Domain names of a whitelist file (plugin-kit's domain list format). */
export const parseWhitelist = parseDomainList;

const SERIAL_RE = /^@\s+(?:\d+\s+)?IN\s+SOA\s+\S+\s+\S+\s+\(?\s*(\d+)/m;
const MAX_SERIAL = 4_294_967_295;

export interface RpzZoneOptions {
  ttl: number;
  action: string;
  /** Names exempt (rpz-passthru.), read at every write. */
  passthru: () => string[];
  /** The serial of the file on disk when the agent started (0 when none). */
  startSerial?: number;
  /** Seconds since the epoch; a new serial is at least this (RFC 1912 style, never lower than the last). */
  now?: () => number;
}

/**
 * The zone file of a response policy zone: SOA and NS, then for each blocked name the name and
 * its `*.` wildcard pointing at the action's target, and for each exempt name (and its
 * sub-domains) `rpz-passthru.`. A whitelisted name is not written as blocked. Names are relative
 * to the zone ($ORIGIN). The SOA serial rises whenever the records change and stays when they do
 * not, so that an unchanged list neither rewrites the file nor reloads named.
 */
export function rpzZoneFormat(opts: RpzZoneOptions): ListFileFormat {
  let serial = opts.startSerial ?? 0;
  let lastBody: string | undefined;
  const now = opts.now ?? (() => Math.floor(Date.now() / 1000));
  const target = actionTarget(opts.action);
  return {
    render(entries: BlockEntry[]): string {
      const passthru = opts.passthru();
      const exempt = new Set(passthru);
      const lines: string[] = [];
      for (const e of entries) {
        if (exempt.has(e.value)) continue;
        lines.push(`${e.value} CNAME ${target}`, `*.${e.value} CNAME ${target}`);
      }
      for (const name of passthru) lines.push(`${name} CNAME rpz-passthru.`, `*.${name} CNAME rpz-passthru.`);
      const body = lines.join('\n');
      if (body !== lastBody) {
        serial = Math.min(MAX_SERIAL, Math.max(serial + 1, now()));
        lastBody = body;
      }
      const head = [`$TTL ${opts.ttl}`, `@ ${opts.ttl} IN SOA localhost. hostmaster.localhost. ${serial} 3600 600 86400 ${opts.ttl}`, `@ ${opts.ttl} IN NS localhost.`];
      return [...head, ...(body ? [body] : []), ''].join('\n');
    },
    parse(text: string): string[] {
      const names = new Set<string>();
      for (const line of text.split('\n')) {
        const m = /^([^\s;$@*][^\s;]*)\s+(?:\d+\s+)?(?:IN\s+)?CNAME\s+(\S+)\s*$/i.exec(line);
        if (!m || m[2]!.toLowerCase() === 'rpz-passthru.') continue;
        const name = domainCodec.canonical(m[1]!);
        if (name) names.add(name);
      }
      return [...names].sort(domainCodec.compare);
    },
  };
}

/** `45.77.1.0/24` → `24.0.1.77.45.rpz-ip`: the owner name of an rpz-ip trigger (prefix, then the octets reversed). */
export function rpzIpOwner(cidr: string): string {
  const [address, prefix = '32'] = cidr.split('/');
  return `${prefix}.${address!.split('.').reverse().join('.')}.rpz-ip`;
}

/**
 * The zone file of a policy zone of rpz-ip triggers: for each blocked IPv4 address or network,
 * an answer that resolves into it gets the action (the name's own sub-domains are not a notion
 * here). Same SOA rule as `rpzZoneFormat`.
 */
export function rpzIpZoneFormat(opts: Omit<RpzZoneOptions, 'passthru'>): ListFileFormat {
  let serial = opts.startSerial ?? 0;
  let lastBody: string | undefined;
  const now = opts.now ?? (() => Math.floor(Date.now() / 1000));
  const target = actionTarget(opts.action);
  return {
    render(entries: BlockEntry[]): string {
      const body = entries.map((e) => `${rpzIpOwner(e.value)} CNAME ${target}`).join('\n');
      if (body !== lastBody) {
        serial = Math.min(MAX_SERIAL, Math.max(serial + 1, now()));
        lastBody = body;
      }
      const head = [`$TTL ${opts.ttl}`, `@ ${opts.ttl} IN SOA localhost. hostmaster.localhost. ${serial} 3600 600 86400 ${opts.ttl}`, `@ ${opts.ttl} IN NS localhost.`];
      return [...head, ...(body ? [body] : []), ''].join('\n');
    },
    parse(text: string): string[] {
      const cidrs: string[] = [];
      for (const line of text.split('\n')) {
        const m = /^(\d{1,2})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.rpz-ip\s+(?:\d+\s+)?(?:IN\s+)?CNAME\s/i.exec(line);
        if (!m) continue;
        const cidr = ipv4Codec.canonical(`${m[5]}.${m[4]}.${m[3]}.${m[2]}/${m[1]}`);
        if (cidr) cidrs.push(cidr);
      }
      return [...new Set(cidrs)].sort(ipv4Codec.compare);
    },
  };
}

/** The SOA serial of a zone file written before (0 when absent or unreadable). */
export function serialOf(path: string): number {
  try {
    return Number(SERIAL_RE.exec(readFileSync(path, 'utf8'))?.[1] ?? 0);
  } catch {
    return 0;
  }
}


export const bindRpzEnforcer = defineEnforcer<BindRpzConfig>({
  name: 'bind-rpz',
  serves: 'dns_e',
  configSchema: BindRpzConfig,
  kinds: ['domain', 'ipv4'],
  kindsOf: (config) => ['domain', ...(config.options.ip_triggers ? (['ipv4'] as const) : [])],
  async create(config, ctx) {
    const kind = ctx.kind ?? 'ipv4';
    const o = config.options;
    if (kind === 'ipv4' && o.ip_triggers) {
      const ip = o.ip_triggers;
      return createFileListEnforcer({
        path: ip.file,
        format: rpzIpZoneFormat({ ttl: o.ttl, action: o.action, startSerial: serialOf(ip.file) }),
        codec: ipv4Codec,
        reloadCommand: ip.reload_command ?? `rndc reload ${ip.zone.replace(/\.$/, '')}`,
        reloadTimeoutMs: o.reload_timeout_seconds * 1000,
        capacity: o.max_entries,
        fileMode: 0o644,
        run: (command, options) => (ctx.run ? ctx.run(command, options) : runShell(command, options)),
        log: ctx.log.child({ enforcer: 'bind-rpz', kind }),
      });
    }
    if (kind !== 'domain') throw new Error(`bind-rpz: enforces domains${o.ip_triggers ? ' and IPv4 (ip_triggers)' : ' only (IPv4 with options.ip_triggers)'}, not '${kind}'`);
    const zone = o.zone.replace(/\.$/, '');
    const fixed = o.passthru.map((n) => domainCodec.canonical(n)!).filter(Boolean);
    // Whitelist decisions (Enforcer.allow): passthru rules, so a name under a blocked parent resolves.
    let decided: string[] = [];
    const format = rpzZoneFormat({
      ttl: o.ttl,
      action: o.action,
      passthru: () => [...new Set([...fixed, ...readDomainListFile(config.domains_file_whitelist), ...decided])].sort(domainCodec.compare),
      startSerial: serialOf(config.domains_file),
    });
    const enforcer = createFileListEnforcer({
      path: config.domains_file,
      format,
      codec: domainCodec,
      reloadCommand: o.reload_command ?? `rndc reload ${zone}`,
      reloadTimeoutMs: o.reload_timeout_seconds * 1000,
      capacity: o.max_entries,
      fileMode: 0o644,
      run: (command, options) => (ctx.run ? ctx.run(command, options) : runShell(command, options)),
      log: ctx.log.child({ enforcer: 'bind-rpz', kind }),
    });
    return Object.assign(enforcer, {
      allow(values: readonly string[]) {
        decided = values.flatMap((v) => domainCodec.canonical(v) ?? []);
      },
    });
  },
});
