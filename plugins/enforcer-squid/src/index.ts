import { z } from 'zod';
import { IpsEntries } from '@rampart/contracts';
import { codecOf, createFileListEnforcer, defineEnforcer, runShell, type BlockEntry, type KindCodec, type ListFileFormat } from '@rampart/plugin-kit';

/**
 * `ips.proxy_f`, Squid dialect: the agent writes Squid ACL files that an `http_access deny`
 * references (README), one per kind, and runs `squid -k reconfigure` after each change.
 * The vendor API fields of the entry (`api`, `group`, `policy`, `action`, `parent`, `username`,
 * `password`) serve a vendor dialect that is not built: an active entry that sets `api` is refused.
 */

const SquidOptions = z
  .strictObject({
    domains_file: z.string().max(4096).default('').describe('dstdomain ACL file of blocked domains (each with its sub-domains); empty: domains are not enforced'),
    reload_command: z.string().max(4096).default('squid -k reconfigure').describe('Run after each change of an ACL file; empty runs nothing'),
    reload_timeout_seconds: z.number().int().min(1).max(600).default(60),
    max_entries: z.number().int().min(1).max(10_000_000).default(100_000).describe('Capacity per kind (highest scores kept)'),
  })
  .default({ domains_file: '', reload_command: 'squid -k reconfigure', reload_timeout_seconds: 60, max_entries: 100_000 });

export const SquidConfig = IpsEntries.proxy_f.extend({ options: SquidOptions }).superRefine((cfg, ctx) => {
  if (!cfg.active) return;
  if (cfg.api) ctx.addIssue({ code: 'custom', path: ['api'], message: 'the vendor API dialect is not supported; leave api empty for the Squid dialect' });
  if (!cfg.urls_file && !cfg.options.domains_file)
    ctx.addIssue({ code: 'custom', path: ['urls_file'], message: 'urls_file or options.domains_file is required when active' });
  if (cfg.urls_file && cfg.urls_file === cfg.options.domains_file)
    ctx.addIssue({ code: 'custom', path: ['options', 'domains_file'], message: 'URLs and domains need a file each' });
});
export type SquidConfig = z.infer<typeof SquidConfig>;

/** Every character a POSIX extended regular expression (Squid's `url_regex`) gives a meaning. */
const REGEX_META = /[.[\]()*+?{}|^$\\]/g;

/** `^…$` with every metacharacter escaped: the pattern matches exactly this URL and nothing else. */
export function urlPattern(url: string): string {
  return `^${url.replace(REGEX_META, '\\$&')}$`;
}

/** The URL a pattern of `urlPattern` matches, or undefined for a line it did not write. */
export function patternUrl(line: string): string | undefined {
  const m = /^\^(.*)\$$/.exec(line);
  if (!m) return undefined;
  let out = '';
  const body = m[1]!;
  for (let i = 0; i < body.length; i++) {
    const c = body[i]!;
    if (c === '\\') {
      const next = body[++i];
      if (next === undefined) return undefined;
      out += next;
    } else if ('.[]()*+?{}|^$'.includes(c)) return undefined;
    else out += c;
  }
  return out;
}

const HEADER = '# Written by the Rampart agent; every change is overwritten.\n';

function lines(text: string): string[] {
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
}

function canonicalSorted(values: Iterable<string | undefined>, codec: KindCodec): string[] {
  const out = new Set<string>();
  for (const v of values) {
    const c = v === undefined ? undefined : codec.canonical(v);
    if (c) out.add(c);
  }
  return [...out].sort(codec.compare);
}

/** `url_regex` file: one anchored, fully escaped pattern per URL, in the codec's order. */
export function urlRegexFormat(codec: KindCodec): ListFileFormat {
  return {
    render: (entries: BlockEntry[]) => HEADER + entries.map((e) => `${urlPattern(e.value)}\n`).join(''),
    parse: (text) => canonicalSorted(lines(text).map(patternUrl), codec),
  };
}

/** `dstdomain` file: `.example.com` (the domain and every sub-domain), in the codec's order. */
export function dstdomainFormat(codec: KindCodec): ListFileFormat {
  return {
    render: (entries: BlockEntry[]) => HEADER + entries.map((e) => `.${e.value}\n`).join(''),
    parse: (text) => canonicalSorted(lines(text).map((l) => l.replace(/^\./, '')), codec),
  };
}

export const squidEnforcer = defineEnforcer<SquidConfig>({
  name: 'squid',
  serves: 'proxy_f',
  configSchema: SquidConfig,
  kinds: ['url', 'domain'],
  kindsOf: (config) => [...(config.urls_file ? (['url'] as const) : []), ...(config.options.domains_file ? (['domain'] as const) : [])],
  async create(config, ctx) {
    const kind = ctx.kind ?? 'url';
    if (kind !== 'url' && kind !== 'domain') throw new Error(`squid: enforces URLs and domains, not '${kind}'`);
    const path = kind === 'url' ? config.urls_file : config.options.domains_file;
    if (!path) throw new Error(`squid: no file configured for kind '${kind}' (${kind === 'url' ? 'urls_file' : 'options.domains_file'})`);
    const codec = codecOf(kind);
    return createFileListEnforcer({
      path,
      format: kind === 'url' ? urlRegexFormat(codec) : dstdomainFormat(codec),
      codec,
      reloadCommand: config.options.reload_command,
      reloadTimeoutMs: config.options.reload_timeout_seconds * 1000,
      capacity: config.options.max_entries,
      run: (command, options) => (ctx.run ? ctx.run(command, options) : runShell(command, options)),
      log: ctx.log.child({ enforcer: 'squid', kind }),
    });
  },
});
