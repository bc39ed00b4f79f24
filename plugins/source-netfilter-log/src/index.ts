import { IdsEntries } from '@rampart/contracts';
import { defineSource, SourceOptionsBase, startCommandSource, startTailedSource } from '@rampart/plugin-kit';
import type { DetectionMode, SourceDefinition } from '@rampart/plugin-kit';
import { z } from 'zod';
import { NetfilterParser } from './parser.ts';

export { NetfilterParser } from './parser.ts';
export { parseLoggedPacket } from './packet.ts';

const JOURNAL = ['journalctl', '--dmesg', '--follow', '--output=json', '--lines=0'] as const;

export const NetfilterLogOptions = SourceOptionsBase.extend({
  /** `file`: tail `log_path` (kern.log); `journal`: follow `journalctl --dmesg` (no offsets kept). */
  input: z.enum(['file', 'journal']).default('file'),
  /** `kernel`: kern.log/journal lines of the kernel; `ulogd`: a ulogd2 LOGEMU file (nft `log group`, iptables NFLOG). */
  format: z.enum(['kernel', 'ulogd']).default('kernel'),
  log_path: z.string().min(1).max(4096).default('/var/log/kern.log'),
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
    start: (config, mode, ctx) =>
      config.options.input === 'journal'
        ? startCommandSource(JOURNAL, parser(config, mode), ctx)
        : startTailedSource(config.options.log_path, parser(config, mode), ctx, config.options.start_at),
  });
}

/** `packet_filter`: netfilter LOG lines of routed and local traffic (iptables/nftables). */
export const netfilterLogSource = definition('packet_filter', 'netfilter-log');
/** `bridge_filter`: the same for bridged traffic (br_netfilter PHYSIN=/PHYSOUT=, ebtables log). */
export const bridgeFilterLogSource = definition('bridge_filter', 'netfilter-log-bridge');
