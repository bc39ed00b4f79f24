import { z } from 'zod';
import { IpsEntries } from '@rampart/contracts';
import { cidrToListForm, createFileListEnforcer, defineEnforcer, parseCidrLines, renderListFile, runShell, type BlockEntry } from '@rampart/plugin-kit';

const ModSecurityOptions = z
  .strictObject({
    max_entries: z
      .number()
      .int()
      .min(1)
      .max(10_000_000)
      .default(500_000)
      .describe('Capacity; ModSecurity loads the whole file into memory at every reload'),
    reload_timeout_seconds: z.number().int().min(1).max(600).default(60),
  })
  .default({ max_entries: 500_000, reload_timeout_seconds: 60 });

export const ModSecurityConfig = IpsEntries.waf.extend({ options: ModSecurityOptions }).superRefine((cfg, ctx) => {
  if (cfg.active && !cfg.ruleset) ctx.addIssue({ code: 'custom', path: ['ruleset'], message: 'the @ipMatchFromFile data file path is required when active' });
});
export type ModSecurityConfig = z.infer<typeof ModSecurityConfig>;

/**
 * The `@ipMatchFromFile` data file: one address or network per line. ModSecurity reads it when
 * the rules load (server start or reload), so every change needs `waf_reload_command`.
 */
export const ipMatchFileFormat = {
  render(entries: BlockEntry[]): string {
    return renderListFile('# rampart block list for @ipMatchFromFile; replaced atomically', entries, (e) => cidrToListForm(e.value));
  },
  parse: (text: string) => parseCidrLines(text),
};

export const modsecurityEnforcer = defineEnforcer<ModSecurityConfig>({
  name: 'modsecurity',
  serves: 'waf',
  configSchema: ModSecurityConfig,
  async create(config, ctx) {
    return createFileListEnforcer({
      path: config.ruleset,
      format: ipMatchFileFormat,
      reloadCommand: config.waf_reload_command,
      reloadTimeoutMs: config.options.reload_timeout_seconds * 1000,
      capacity: config.options.max_entries,
      run: ctx.run ?? runShell,
      log: ctx.log.child({ enforcer: 'modsecurity' }),
    });
  },
});
