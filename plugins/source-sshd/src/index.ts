import { IdsEntries } from '@rampart/contracts';
import { defineSource, isJournalLocation, JournalOptions, journalMatch, SourceOptionsBase, startJournalSource, startTailedSource } from '@rampart/plugin-kit';
import { z } from 'zod';
import { SshParser } from './parser.ts';

export { SshParser } from './parser.ts';
export type { SshParserOptions, SshParserStats } from './parser.ts';

export const SshSourceOptions = SourceOptionsBase.extend({
  ...JournalOptions.shape,
  /** Program names read from the log (OpenSSH 9.8 logs authentication as `sshd-session`). */
  programs: z.array(z.string().min(1).max(64).regex(/^[\w.-]+$/)).min(1).max(8).default(['sshd', 'sshd-session']),
});

export const SshSourceConfig = IdsEntries.ssh_log.extend({
  /** A log file, or `journal:<unit or identifier>` (e.g. `journal:ssh.service`, `journal:sshd`). */
  ssh_log_location: z
    .string()
    .min(1, 'a log file path is required')
    .max(4096)
    .describe('Log file path')
    .superRefine((location, ctx) => {
      if (!isJournalLocation(location)) return;
      const match = journalMatch(location);
      if ('error' in match) ctx.addIssue({ code: 'custom', message: match.error });
    }),
  options: SshSourceOptions.prefault({}),
});
export type SshSourceConfig = z.infer<typeof SshSourceConfig>;

/** `ssh_log`: OpenSSH authentication failures from auth.log, syslog, RFC 5424, journald exports or the journal itself. */
export const sshdSource = defineSource<SshSourceConfig>({
  name: 'sshd',
  serves: 'ssh_log',
  configSchema: SshSourceConfig,
  parseDefaults: { active: true, ssh_log_location: '-' },
  createParser: (config, mode) => new SshParser({ mode, programs: config.options.programs }),
  start: (config, mode, ctx) => {
    const parser = new SshParser({ mode, programs: config.options.programs });
    const { ssh_log_location: location, options } = config;
    return isJournalLocation(location)
      ? startJournalSource({ location, journal: options, parser, ctx, startAt: options.start_at })
      : startTailedSource(location, parser, ctx, options.start_at);
  },
});
