import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { IpsEntries } from '@rampart/contracts';
import { defineEnforcer } from '@rampart/plugin-kit';
import { parseBrokerAddress } from './broker-address.ts';
import { TieFiles, TrustLevel } from './tie.ts';

/*
 * `ips.endpoint_d`: file digests (MD5, SHA-1, SHA-256) become enterprise file reputations in
 * TIE, over the DXL fabric (MQTT over TLS with client certificates). `api` is the broker's
 * address; `username`/`password` are passed to the broker when set (DXL brokers authenticate by
 * certificate and need neither).
 */

const PEM = /^-----BEGIN [A-Z ]*PRIVATE KEY-----/;

const TieOptions = z
  .strictObject({
    block_trust_level: z
      .enum(['known_malicious', 'most_likely_malicious', 'might_be_malicious'])
      .default('known_malicious')
      .describe('The enterprise reputation an enforced digest gets'),
    release_trust_level: z.enum(['not_set', 'unknown']).default('not_set').describe('The enterprise reputation a digest is set back to when it leaves the list'),
    whitelist_trust_level: z
      .enum(['known_trusted', 'most_likely_trusted', 'might_be_trusted', 'none'])
      .default('known_trusted')
      .describe("The enterprise reputation of a digest the organization whitelisted; none: whitelists are not sent to TIE"),
    filename: z.string().max(260).default('').describe('File name sent with each reputation (TIE shows it)'),
    comment: z.string().max(500).default('Rampart shared threat intelligence').describe('Comment sent with each reputation'),
    max_entries: z.number().int().min(1).max(1_000_000).default(10_000).describe('Digests held at most (highest scores kept)'),
    in_flight: z.number().int().min(1).max(256).default(16).describe('DXL requests in flight at once'),
    read_back: z
      .enum(['tie', 'list_file'])
      .default('tie')
      .describe('How the enforced set is read back (every reconcile): ask TIE once per listed digest, or trust fileslist_file (no requests; misses changes made in TIE)'),
    client_id: z
      .string()
      .regex(/^[A-Za-z0-9{}._:-]{1,64}$/, { message: 'letters, digits and {}._:- (at most 64)' })
      .optional()
      .describe('DXL client id; default a fresh {uuid} per start'),
    broker_identity: z.enum(['ca', 'ca_and_hostname']).default('ca').describe("What the broker's certificate must prove: chain to broker_ca_bundle (as DXL clients check), or also name the host"),
    connect_timeout_seconds: z.number().int().min(1).max(600).default(30),
    request_timeout_seconds: z.number().int().min(1).max(600).default(30),
  })
  .default({
    block_trust_level: 'known_malicious',
    release_trust_level: 'not_set',
    whitelist_trust_level: 'known_trusted',
    filename: '',
    comment: 'Rampart shared threat intelligence',
    max_entries: 10_000,
    in_flight: 16,
    read_back: 'tie',
    broker_identity: 'ca',
    connect_timeout_seconds: 30,
    request_timeout_seconds: 30,
  });

export const OpenDxlTieConfig = IpsEntries.endpoint_d.extend({ options: TieOptions }).superRefine((cfg, ctx) => {
  if (!cfg.active) return;
  const need = (value: string, field: string, message: string) => value || ctx.addIssue({ code: 'custom', path: [field], message });
  need(cfg.api, 'api', 'the DXL broker address (host:port) is required when active');
  if (cfg.api && !parseBrokerAddress(cfg.api)) ctx.addIssue({ code: 'custom', path: ['api'], message: 'a broker address: host, host:port, ssl://host:port or mqtts://host:port' });
  need(cfg.fileslist_file, 'fileslist_file', 'the digest list file is required when active (it records what this agent set in TIE)');
  need(cfg.broker_ca_bundle, 'broker_ca_bundle', "the broker CA bundle (PEM file) is required when active");
  need(cfg.cert_file, 'cert_file', 'the client certificate (PEM file) is required when active');
  need(cfg.private_key, 'private_key', "the client certificate's private key (PEM text or a PEM file path) is required when active");
});
export type OpenDxlTieConfig = z.infer<typeof OpenDxlTieConfig>;

/** The private key: PEM text as given, or the contents of the file it names. */
async function privateKeyPem(value: string): Promise<string> {
  return PEM.test(value.trim()) ? value : readFile(value, 'utf8');
}

export const openDxlTieEnforcer = defineEnforcer<OpenDxlTieConfig>({
  name: 'opendxl-tie',
  serves: 'endpoint_d',
  configSchema: OpenDxlTieConfig,
  kinds: ['file'],
  kindsOf: () => ['file'],
  async create(config, ctx) {
    const kind = ctx.kind ?? 'ipv4';
    if (kind !== 'file') throw new Error(`opendxl-tie: enforces file digests only, not '${kind}'`);
    const o = config.options;
    const broker = parseBrokerAddress(config.api);
    if (!broker) throw new Error(`opendxl-tie: not a broker address: ${config.api}`);
    // The MQTT client and its streams (~1 MB of code) load only for a configured enforcer: the
    // agent imports every plugin's definition (this module) at start.
    const [{ DxlClient }, { createTieEnforcer }] = await Promise.all([import('./dxl-client.ts'), import('./tie-adapter.ts')]);
    const dxl = new DxlClient({
      ...broker,
      ca: await readFile(config.broker_ca_bundle, 'utf8'),
      cert: await readFile(config.cert_file, 'utf8'),
      key: await privateKeyPem(config.private_key),
      ...(config.username ? { username: config.username } : {}),
      ...(config.password ? { password: config.password } : {}),
      checkHostname: o.broker_identity === 'ca_and_hostname',
      ...(o.client_id ? { clientId: o.client_id } : {}),
      connectTimeoutMs: o.connect_timeout_seconds * 1000,
      requestTimeoutMs: o.request_timeout_seconds * 1000,
    });
    return createTieEnforcer({
      tie: new TieFiles(dxl),
      listFile: config.fileslist_file,
      blockLevel: TrustLevel[o.block_trust_level],
      releaseLevel: TrustLevel[o.release_trust_level],
      trustLevel: o.whitelist_trust_level === 'none' ? null : TrustLevel[o.whitelist_trust_level],
      filename: o.filename,
      comment: o.comment,
      inFlight: o.in_flight,
      readBack: o.read_back,
      connect: async (signal) => {
        await dxl.connect(signal);
      },
      close: () => dxl.close(),
      capacity: o.max_entries,
      log: ctx.log.child({ enforcer: 'opendxl-tie', kind, broker: `${broker.host}:${broker.port}` }),
    });
  },
});
