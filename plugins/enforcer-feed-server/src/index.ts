import { mkdir } from 'node:fs/promises';
import { hostname } from 'node:os';
import { defineEnforcer, parseConnections, SshSession, sshTarget, type EnforcerContext } from '@rampart/plugin-kit';
import { CspFeedConfig, deviceName, feedNames, FirewallBFeedConfig, type FeedLabel, type FeedServerConfig } from './config.ts';
import { createFeedServerEnforcer, type FeedServerEnforcer } from './feed-enforcer.ts';
import { startFeedHttpServer } from './feed-http.ts';
import { DeviceRefresher, type Device } from './refresh.ts';
import { serverCertificate } from './tls.ts';

export { CspFeedConfig, DEFAULT_STATE_DIR, feedNames, FirewallBFeedConfig, LABEL_DEFAULTS, type FeedLabel, type FeedServerConfig } from './config.ts';
export { feedBody, feedEntries, etagOf, parseFeed, publishFeed } from './feed-files.ts';
export { notModified } from './feed-http.ts';
export { commandsFor, refusal } from './refresh.ts';
export { selfSignedCertificate } from './self-signed.ts';
export type { FeedServerEnforcer, FeedServerStatus, FeedStatus } from './feed-enforcer.ts';

const hostForUrl = (host: string) => (host.includes(':') ? `[${host}]` : host);

async function devicesOf(config: FeedServerConfig): Promise<Device[]> {
  if (!config.command) return [];
  const o = config.options;
  return Promise.all(
    parseConnections(config.connections).map(async (address) => {
      const name = deviceName(address);
      const pin = o.device_host_keys[name] || o.host_key_sha256;
      return { name, shell: new SshSession(await sshTarget(address, o.ssh_user, o.ssh_password, { ...o, host_key_sha256: pin })) };
    }),
  );
}

/** One implementation for both labels: only the defaults (capacity, port, state_dir) differ. */
async function createFeedServer(label: FeedLabel, config: FeedServerConfig, ctx: EnforcerContext): Promise<FeedServerEnforcer> {
  const o = config.options;
  const log = ctx.log.child({ enforcer: 'feed-server', label });
  const feeds = feedNames(config.feeds).map((name) => ({ name, capacity: o.feed_max_entries[name] ?? o.max_entries }));
  await mkdir(o.state_dir, { recursive: true, mode: 0o750 });
  const certificate = await serverCertificate({
    certFile: o.cert_file,
    keyFile: o.key_file,
    stateDir: o.state_dir,
    names: o.cert_names.length > 0 ? o.cert_names : [hostname(), 'localhost', '127.0.0.1'],
    days: o.cert_days,
    log,
  });
  const devices = await devicesOf(config);
  const http = await startFeedHttpServer({
    host: o.listen_host,
    port: o.listen_port,
    cert: certificate.cert,
    key: certificate.key,
    username: o.username,
    password: config.password,
    dir: o.state_dir,
    feeds: feeds.map((f) => f.name),
    log,
  });
  const shown = o.listen_host === '0.0.0.0' || o.listen_host === '::' ? hostname() : o.listen_host;
  log.info({ port: http.port, feeds: feeds.map((f) => f.name), sha256_fingerprint: certificate.sha256_fingerprint }, 'serving feeds');
  const parts = {
    label,
    dir: o.state_dir,
    feeds,
    origin: `https://${hostForUrl(shown)}:${http.port}`,
    username: o.username,
    updatesMinutes: config.updates ? Number(config.updates) : null,
    http,
    certificate,
    ...(devices.length > 0 ? { refresher: new DeviceRefresher(devices, config.command, log) } : {}),
    log,
  };
  try {
    return await createFeedServerEnforcer(parts);
  } catch (err) {
    // The port is free again for the agent's next attempt.
    await http.close();
    throw err;
  }
}

/** `ips.firewall_b`: Palo Alto External Dynamic Lists pull the block list from the agent. */
export const firewallBFeedEnforcer = defineEnforcer<FeedServerConfig>({
  name: 'feed-server',
  serves: 'firewall_b',
  configSchema: FirewallBFeedConfig,
  create: (config, ctx) => createFeedServer('firewall_b', config, ctx),
});

/** `ips.csp`: FortiGate external threat feeds and Cisco Security Intelligence feeds pull it. */
export const cspFeedEnforcer = defineEnforcer<FeedServerConfig>({
  name: 'feed-server',
  serves: 'csp',
  configSchema: CspFeedConfig,
  create: (config, ctx) => createFeedServer('csp', config, ctx),
});
