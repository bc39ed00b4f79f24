import { IdsEntries } from '@rampart/contracts';
import { defineSource, SourceOptionsBase, startTailedSource } from '@rampart/plugin-kit';
import { z } from 'zod';
import { SshParser } from './parser.ts';

export { SshParser } from './parser.ts';
export type { SshParserOptions, SshParserStats } from './parser.ts';

export const SshSourceOptions = SourceOptionsBase.extend({
  /** Program names read from the log (OpenSSH 9.8 logs authentication as `sshd-session`). */
  programs: z.array(z.string().min(1).max(64).regex(/^[\w.-]+$/)).min(1).max(8).default(['sshd', 'sshd-session']),
});

export const SshSourceConfig = IdsEntries.ssh_log.extend({
  ssh_log_location: z.string().min(1, 'a log file path is required').max(4096).describe('Log file path'),
  options: SshSourceOptions.prefault({}),
});
export type SshSourceConfig = z.infer<typeof SshSourceConfig>;

/** `ssh_log`: OpenSSH authentication failures from auth.log, syslog, RFC 5424 or journald exports. */
export const sshdSource = defineSource<SshSourceConfig>({
  name: 'sshd',
  serves: 'ssh_log',
  configSchema: SshSourceConfig,
  parseDefaults: { active: true, ssh_log_location: '-' },
  createParser: (config, mode) => new SshParser({ mode, programs: config.options.programs }),
  start: (config, mode, ctx) =>
    startTailedSource(config.ssh_log_location, new SshParser({ mode, programs: config.options.programs }), ctx, config.options.start_at),
});
