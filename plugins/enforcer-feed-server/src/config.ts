import { z } from 'zod';
import { IpsEntries, secret } from '@rampart/contracts';
import { parseConnections, SSH_OPTION_DEFAULTS, sshOptionsShape } from '@rampart/plugin-kit';

export type FeedLabel = 'firewall_b' | 'csp';

/**
 * What differs between the two labels: the device's documented capacity per feed and the port.
 * - firewall_b, Palo Alto EDL: 50,000 IP addresses on most platforms (PAN-OS 7.1+ docs; the
 *   largest models take 150,000; newer releases size it per model), excess skipped with a log.
 * - csp, FortiGate external threat feed / Cisco SI feed: FortiOS before 7.4.4 takes 128K lines or
 *   10 MB per feed and truncates the rest (later releases: per-model totals, e.g. 300,000); Cisco
 *   SI only caps the file (500 MB). 128,000 is the smallest of these, so it fits either.
 */
export const LABEL_DEFAULTS: Record<FeedLabel, { max_entries: number; listen_port: number }> = {
  firewall_b: { max_entries: 50_000, listen_port: 8443 },
  csp: { max_entries: 128_000, listen_port: 8444 },
};

export const DEFAULT_STATE_DIR = (label: FeedLabel) => `/var/lib/rampart-agent/feeds/${label}`;

const FEED_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/** A device as `connections` names it and as the status reports it. */
export const deviceName = (address: { host: string; port?: number }) =>
  address.port ? `${address.host.includes(':') ? `[${address.host}]` : address.host}:${address.port}` : address.host;

/** The names of a `feeds` setting (comma-separated); empty entries are skipped. */
export const feedNames = (text: string): string[] =>
  text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

function optionsSchema(label: FeedLabel) {
  const d = LABEL_DEFAULTS[label];
  const defaults = {
    ...SSH_OPTION_DEFAULTS,
    listen_host: '0.0.0.0',
    listen_port: d.listen_port,
    username: 'rampart',
    state_dir: DEFAULT_STATE_DIR(label),
    cert_file: '',
    key_file: '',
    cert_names: [] as string[],
    cert_days: 3650,
    max_entries: d.max_entries,
    feed_max_entries: {} as Record<string, number>,
    ssh_user: '',
    ssh_password: '',
    device_host_keys: {} as Record<string, string>,
  };
  return z
    .strictObject({
      listen_host: z.string().min(1).max(255).default(defaults.listen_host).describe('Address the HTTPS server listens on'),
      listen_port: z.number().int().min(0).max(65535).default(d.listen_port).describe('0 picks a free port (tests)'),
      username: z
        .string()
        .min(1)
        .max(128)
        .regex(/^[^:\s]+$/, { message: 'no colon or blank (basic auth splits at the first colon)' })
        .default('rampart')
        .describe('Basic auth user the devices send'),
      state_dir: z.string().min(1).max(4096).default(defaults.state_dir).describe('Holds the served files and the generated certificate'),
      cert_file: z.string().max(4096).default('').describe('PEM certificate (chain) to serve; empty: a self-signed one in state_dir/tls'),
      key_file: z.string().max(4096).default('').describe('PEM private key of cert_file'),
      cert_names: z.array(z.string().min(1).max(253)).max(50).default([]).describe('DNS names and IPs of a generated certificate; empty: the host name, localhost, 127.0.0.1'),
      cert_days: z.number().int().min(1).max(36_500).default(3650),
      max_entries: z.number().int().min(1).max(10_000_000).default(d.max_entries).describe('Entries each feed serves (the device capacity)'),
      feed_max_entries: z.record(z.string(), z.number().int().min(1).max(10_000_000)).default({}).describe('Capacity of one feed, by name'),
      ...sshOptionsShape,
      ssh_user: z.string().max(128).default('').describe('SSH user on the devices (refresh)'),
      ssh_password: secret(z.string().max(4096).default('').describe('Secret; returned masked')),
      device_host_keys: z
        .record(z.string(), sshOptionsShape.host_key_sha256)
        .default({})
        .describe('Pinned host key of one device, by its connections entry (host or host:port); others use host_key_sha256'),
    })
    .default(defaults);
}

export function feedServerConfig(label: FeedLabel) {
  return IpsEntries[label].extend({ options: optionsSchema(label) }).superRefine((cfg, ctx) => {
    const issue = (path: (string | number)[], message: string) => ctx.addIssue({ code: 'custom', path, message });
    const names = feedNames(cfg.feeds);
    names.forEach((name) => FEED_NAME.test(name) || issue(['feeds'], `'${name}' is not a feed name: letters, digits, _ . - (at most 64)`));
    if (new Set(names).size !== names.length) issue(['feeds'], 'a feed is named twice');
    for (const name of Object.keys(cfg.options.feed_max_entries)) {
      if (!names.includes(name)) issue(['options', 'feed_max_entries', name], `'${name}' is not one of the feeds`);
    }
    const o = cfg.options;
    if (Boolean(o.cert_file) !== Boolean(o.key_file)) issue(['options', o.cert_file ? 'key_file' : 'cert_file'], 'cert_file and key_file go together');
    let devices: string[] = [];
    try {
      devices = parseConnections(cfg.connections).map(deviceName);
    } catch (err) {
      issue(['connections'], (err as Error).message);
    }
    for (const name of Object.keys(o.device_host_keys)) {
      if (!devices.includes(name)) issue(['options', 'device_host_keys', name], `'${name}' is not an entry of connections`);
    }
    if (!cfg.active) return;
    if (names.length === 0) issue(['feeds'], 'at least one feed name is required when active');
    if (!cfg.password) issue(['password'], 'the feed password (basic auth) is required: an empty one would serve the list to anyone');
    if (devices.length > 0 || cfg.command) {
      if (!cfg.command) issue(['command'], "the refresh command is required with connections (e.g. 'request system external-list refresh type ip name {feed}')");
      if (devices.length === 0) issue(['connections'], 'the command needs the devices to run it on');
      if (!o.ssh_user) issue(['options', 'ssh_user'], 'required to log in to the devices');
      if (!o.ssh_password && !o.private_key_path) issue(['options', 'ssh_password'], 'a password or options.private_key_path is required');
      const unpinned = devices.filter((d) => !o.device_host_keys[d]);
      if (!o.host_key_sha256 && unpinned.length > 0) issue(['options', 'host_key_sha256'], `the host key of ${unpinned.join(', ')} must be pinned (here or in device_host_keys)`);
    }
  });
}

export const FirewallBFeedConfig = feedServerConfig('firewall_b');
export const CspFeedConfig = feedServerConfig('csp');
export type FeedServerConfig = z.infer<typeof FirewallBFeedConfig>;
