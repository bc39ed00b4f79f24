import { z } from 'zod';
import { IpsEntries, PF_LIST_FILE_KEY } from '@rampart/contracts';
import {
  cidrToListForm,
  commandOnPath,
  createFileListEnforcer,
  defineEnforcer,
  parseCidrLines,
  renderListFile,
  runShell,
  shellQuote,
  type BlockEntry,
} from '@rampart/plugin-kit';

/** pf's default `set limit table-entries` on OpenBSD and FreeBSD. */
export const PF_DEFAULT_TABLE_ENTRIES = 200_000;

const PfOptions = z
  .strictObject({
    table: z
      .string()
      .regex(/^[A-Za-z0-9_]{1,31}$/, { message: 'a pf table name: letters, digits, _; at most 31' })
      .default('rampart')
      .describe('pf table the default reload command replaces'),
    table_entries_limit: z
      .number()
      .int()
      .min(1)
      .max(100_000_000)
      .default(PF_DEFAULT_TABLE_ENTRIES)
      .describe("The host's `set limit table-entries` (all tables together)"),
    reload_timeout_seconds: z.number().int().min(1).max(600).default(60),
  })
  .default({ table: 'rampart', table_entries_limit: PF_DEFAULT_TABLE_ENTRIES, reload_timeout_seconds: 60 });

export const PfConfig = IpsEntries.pf_list
  .extend({ options: PfOptions })
  .superRefine((cfg, ctx) => {
    if (cfg.active && !cfg[PF_LIST_FILE_KEY]) {
      ctx.addIssue({ code: 'custom', path: [PF_LIST_FILE_KEY], message: 'the table file path is required when active' });
    }
  });
export type PfConfig = z.infer<typeof PfConfig>;

/** The command run when `pflist_reload_command` is empty. */
export function defaultPfReloadCommand(table: string, file: string): string {
  return `pfctl -t ${shellQuote(table)} -T replace -f ${shellQuote(file)}`;
}

/** One address or network per line: the format `pfctl -T replace -f` and `table <t> file` read. */
export const pfTableFormat = {
  render(entries: BlockEntry[]): string {
    return renderListFile('# rampart block list; replaced atomically, do not edit', entries, (e) => cidrToListForm(e.value));
  },
  parse: (text: string) => parseCidrLines(text),
};

export const pfEnforcer = defineEnforcer<PfConfig>({
  name: 'pf',
  serves: 'pf_list',
  configSchema: PfConfig,
  async create(config, ctx) {
    const path = config[PF_LIST_FILE_KEY];
    const usesDefault = !config.pflist_reload_command;
    return createFileListEnforcer({
      path,
      format: pfTableFormat,
      reloadCommand: config.pflist_reload_command || defaultPfReloadCommand(config.options.table, path),
      reloadTimeoutMs: config.options.reload_timeout_seconds * 1000,
      capacity: config.options.table_entries_limit,
      run: ctx.run ?? runShell,
      log: ctx.log.child({ enforcer: 'pf' }),
      // The default command needs pfctl here; a configured one may reach a remote pf.
      probe: async () => {
        if (usesDefault && !(await commandOnPath('pfctl'))) throw new Error('pfctl not found on PATH (set pflist_reload_command)');
      },
    });
  },
});
