import { z } from 'zod';
import { IpsEntries } from '@rampart/contracts';
import { cidrToListForm, commandOnPath, createFileListEnforcer, defineEnforcer, parseCidrLines, renderListFile, runShell, type BlockEntry } from '@rampart/plugin-kit';

export const DEFAULT_NGINX_RELOAD = 'nginx -t && nginx -s reload';
export const DEFAULT_GEO_FILE = '/etc/nginx/rampart-blocklist.conf';

const NginxOptions = z
  .strictObject({
    geo_file: z.string().min(1).max(4096).default(DEFAULT_GEO_FILE).describe('The include of the geo block'),
    max_entries: z
      .number()
      .int()
      .min(1)
      .max(10_000_000)
      .default(1_000_000)
      .describe('Capacity; every reload parses the whole file in the master and in each worker'),
    reload_timeout_seconds: z.number().int().min(1).max(600).default(60),
  })
  .default({ geo_file: DEFAULT_GEO_FILE, max_entries: 1_000_000, reload_timeout_seconds: 60 });

export const NginxConfig = IpsEntries.web_server_list.extend({ options: NginxOptions });
export type NginxConfig = z.infer<typeof NginxConfig>;

/** Lines of an nginx `geo` block: `203.0.113.7 1;`, `198.51.100.0/24 1;`. */
export const geoFormat = {
  render(entries: BlockEntry[]): string {
    return renderListFile('# rampart block list, included in a geo block; replaced atomically', entries, (e) => `${cidrToListForm(e.value)} 1;`);
  },
  parse: (text: string) => parseCidrLines(text, (line) => line.split(/\s+/)[0] ?? ''),
};

export const nginxEnforcer = defineEnforcer<NginxConfig>({
  name: 'nginx',
  serves: 'web_server_list',
  configSchema: NginxConfig,
  async create(config, ctx) {
    return createFileListEnforcer({
      path: config.options.geo_file,
      format: geoFormat,
      // nginx keeps serving the old configuration when `-t` fails, so the reload is all-or-nothing.
      reloadCommand: config.command || DEFAULT_NGINX_RELOAD,
      reloadTimeoutMs: config.options.reload_timeout_seconds * 1000,
      capacity: config.options.max_entries,
      run: ctx.run ?? runShell,
      log: ctx.log.child({ enforcer: 'nginx' }),
      probe: async () => {
        if (!config.command && !(await commandOnPath('nginx'))) throw new Error('nginx not found on PATH (set command)');
      },
    });
  },
});
