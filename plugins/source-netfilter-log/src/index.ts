import { IdsEntries } from '@rampart/contracts';
import { defineSource, isJournalLocation, JournalOptions, SourceOptionsBase, startJournalSource, startTailedSource } from '@rampart/plugin-kit';
import type { DetectionMode, SourceDefinition } from '@rampart/plugin-kit';
import { z } from 'zod';
import { NetfilterParser } from './parser.ts';

export { NetfilterParser } from './parser.ts';
export { parseLoggedPacket } from './packet.ts';

const KERNEL_JOURNAL = 'journal:kernel';

export const NetfilterLogOptions = SourceOptionsBase.extend({
  ...JournalOptions.shape,
  /** `file`: tail `log_path` (kern.log); `journal`: the kernel's journal, as `log_path: "journal:kernel"`. */
  input: z.enum(['file', 'journal']).default('file'),
  /** `kernel`: kern.log/journal lines of the kernel; `ulogd`: a ulogd2 LOGEMU file (nft `log group`, iptables NFLOG). */
  format: z.enum(['kernel', 'ulogd']).default('kernel'),
  /** A file, or `journal:kernel`: the kernel's messages in the journal, resumed from a cursor. */
  log_path: z
    .string()
    .min(1)
    .max(4096)
    .default('/var/log/kern.log')
    .refine((path) => !isJournalLocation(path) || path === KERNEL_JOURNAL, { message: `the only journal location of a packet filter log is ${KERNEL_JOURNAL}` }),
  /** Only LOG lines whose prefix starts with this (the `--log-prefix` / nft `log prefix` of the drop rule). */
  log_prefix: z.string().max(29).default(''),
  /** Distinct destination ports from one source within the window that make a scan. */
  scan_ports: z.number().int().min(2).max(65_535).default(10),
  scan_window_seconds: z.number().int().min(1).max(86_400).default(60),
});

const configOf = (label: 'packet_filter' | 'bridge_filter') => IdsEntries[label].extend({ options: NetfilterLogOptions.prefault({}) });
export const PacketFilterLogConfig = configOf('packet_filter');
export const BridgeFilterLogConfig = configOf('bridge_filter');
export type NetfilterLogConfig = z.infer<typeof PacketFilterLogConfig>;

function definition(label: 'packet_filter' | 'bridge_filter', name: string): SourceDefinition<NetfilterLogConfig> {
  const parser = (config: NetfilterLogConfig, mode: DetectionMode) =>
    new NetfilterParser({ mode, label, logPrefix: config.options.log_prefix, scanPorts: config.options.scan_ports, scanWindowSeconds: config.options.scan_window_seconds, format: config.options.format });
  return defineSource<NetfilterLogConfig>({
    name,
    serves: label,
    configSchema: label === 'packet_filter' ? PacketFilterLogConfig : BridgeFilterLogConfig,
    parseDefaults: { active: true },
    createParser: parser,
    start: (config, mode, ctx) => {
      const { options } = config;
      return options.input === 'journal' || isJournalLocation(options.log_path)
        ? startJournalSource({ location: KERNEL_JOURNAL, journal: options, parser: parser(config, mode), ctx, startAt: options.start_at })
        : startTailedSource(options.log_path, parser(config, mode), ctx, options.start_at);
    },
  });
}

/** `packet_filter`: netfilter LOG lines of routed and local traffic (iptables/nftables). */
export const netfilterLogSource = definition('packet_filter', 'netfilter-log');
/** `bridge_filter`: the same for bridged traffic (br_netfilter PHYSIN=/PHYSOUT=, ebtables log). */
export const bridgeFilterLogSource = definition('bridge_filter', 'netfilter-log-bridge');
