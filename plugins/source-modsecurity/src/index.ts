import { IdsEntries } from '@rampart/contracts';
import { defineSource, SourceOptionsBase, startTailedSource } from '@rampart/plugin-kit';
import type { RunningSource } from '@rampart/plugin-kit';
import { z } from 'zod';
import { WafParser } from './parser.ts';

export { WafParser } from './parser.ts';

/** `waf_logs` holds one path or several separated by commas (e.g. nginx's error and access logs). */
export function wafLogPaths(text: string): string[] {
  return text.split(',').map((p) => p.trim()).filter(Boolean);
}

export const WafSourceConfig = IdsEntries.waf_log.extend({
  waf_logs: z
    .string()
    .max(4096)
    .refine((t) => wafLogPaths(t).length > 0, 'at least one log file path is required')
    .refine((t) => wafLogPaths(t).length <= 16, 'at most 16 log files')
    .describe('Log file path(s), comma-separated'),
  options: SourceOptionsBase.prefault({}),
});
export type WafSourceConfig = z.infer<typeof WafSourceConfig>;

/**
 * `waf_log`: ModSecurity denials (Apache and nginx error logs, JSON audit log) and nginx's
 * basic-auth failures, rate-limit rejections, vulnerability-scanner 404s and garbage 400s.
 */
export const modsecuritySource = defineSource<WafSourceConfig>({
  name: 'modsecurity',
  serves: 'waf_log',
  configSchema: WafSourceConfig,
  parseDefaults: { active: true, waf_logs: '-' },
  createParser: (_config, mode) => new WafParser(mode),
  start(config, mode, ctx): RunningSource {
    // One parser per file: lines of different files never share state.
    const running = wafLogPaths(config.waf_logs).map((path) => startTailedSource(path, new WafParser(mode), ctx, config.options.start_at));
    return { done: Promise.all(running.map((r) => r.done)).then(() => undefined) };
  },
});
