import { z } from 'zod';
import { IpsEntries } from '@rampart/contracts';
import {
  cidrToListForm,
  createFileListEnforcer,
  defineEnforcer,
  parseCidrLines,
  renderListFile,
  runShell,
  type BlockEntry,
  type ListRuntime,
  type TargetChange,
} from '@rampart/plugin-kit';
import { HaproxyRuntimeError, runtimeCommands, runtimeSilent } from './runtime-api.ts';

export { HaproxyRuntimeError, runtimeCommands } from './runtime-api.ts';

/** Commands per connection: keeps one answer buffer bounded on 100k-entry swaps. */
const CHUNK = 5_000;

const HaproxyOptions = z
  .strictObject({
    stats_socket: z
      .string()
      .max(4096)
      .regex(/^$|^\/|^[^/:]+:\d{1,5}$/, { message: 'an absolute UNIX socket path or host:port' })
      .default('')
      .describe('Runtime API (`stats socket ... level admin`); empty = file plus lb_reload_command'),
    max_entries: z.number().int().min(1).max(10_000_000).default(1_000_000),
    timeout_seconds: z.number().int().min(1).max(600).default(60),
  })
  .default({ stats_socket: '', max_entries: 1_000_000, timeout_seconds: 60 });

export const HaproxyConfig = IpsEntries.proxy_lb.extend({ options: HaproxyOptions }).superRefine((cfg, ctx) => {
  if (cfg.active && !cfg.lb_logs) ctx.addIssue({ code: 'custom', path: ['lb_logs'], message: 'the ACL file path is required when active' });
  if (cfg.lb_logs && !/^\/\S*$/.test(cfg.lb_logs)) {
    ctx.addIssue({ code: 'custom', path: ['lb_logs'], message: 'an absolute path without blanks, as the runtime API names the ACL by it' });
  }
});
export type HaproxyConfig = z.infer<typeof HaproxyConfig>;

/** A pattern file for `acl <name> src -f <file>`: one address or network per line. */
export const aclFileFormat = {
  render(entries: BlockEntry[]): string {
    return renderListFile('# rampart block list for "acl ... src -f"; replaced atomically', entries, (e) => cidrToListForm(e.value));
  },
  parse: (text: string) => parseCidrLines(text),
};

/** Lines of `show acl <file>`: `0x55d0c4f1a2b0 203.0.113.7`. */
export function parseShowAcl(text: string): string[] {
  return parseCidrLines(text, (line) => line.split(/\s+/)[1] ?? '');
}

function chunks<T>(items: T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += CHUNK) out.push(items.slice(i, i + CHUNK));
  return out;
}

/**
 * The ACL through the runtime API. A full replace fills a new version (`prepare acl`, `add acl
 * @<v>`) and swaps it in with `commit acl`: requests see the old list or the new one, never a
 * mix. A batch is sent as `del acl` / `add acl` (HAProxy keeps duplicate patterns, so the engine
 * sends only what changed; a list someone cleared is found by `reconcile` and comes back whole).
 */
function runtimeAcl(socket: string, acl: string, timeoutMs: number): ListRuntime {
  return {
    async read(signal?: AbortSignal): Promise<string[]> {
      const [answer] = await runtimeCommands(socket, [`show acl ${acl}`], timeoutMs, signal);
      if (answer!.startsWith('Unknown ACL')) throw new HaproxyRuntimeError(`HAProxy does not load ${acl}: ${answer}`);
      return parseShowAcl(answer!);
    },
    async replace(entries: readonly BlockEntry[], signal?: AbortSignal): Promise<void> {
      const [created] = await runtimeCommands(socket, [`prepare acl ${acl}`], timeoutMs, signal);
      const version = /New version created: (\d+)/.exec(created!)?.[1];
      if (!version) throw new HaproxyRuntimeError(`prepare acl failed: ${created!.slice(0, 300)}`);
      for (const part of chunks([...entries])) {
        await runtimeSilent(socket, part.map((e) => `add acl @${version} ${acl} ${cidrToListForm(e.value)}`), timeoutMs, signal);
      }
      await runtimeSilent(socket, [`commit acl @${version} ${acl}`], timeoutMs, signal);
    },
    async apply(change: TargetChange, signal?: AbortSignal): Promise<void> {
      const commands = [
        ...change.remove.map((c) => `del acl ${acl} ${cidrToListForm(c)}`),
        ...change.add.map((e) => `add acl ${acl} ${cidrToListForm(e.value)}`),
      ];
      for (const part of chunks(commands)) await runtimeSilent(socket, part, timeoutMs, signal);
    },
  };
}

export const haproxyEnforcer = defineEnforcer<HaproxyConfig>({
  name: 'haproxy',
  serves: 'proxy_lb',
  configSchema: HaproxyConfig,
  async create(config, ctx) {
    const timeoutMs = config.options.timeout_seconds * 1000;
    const socket = config.options.stats_socket;
    const runtime = socket ? runtimeAcl(socket, config.lb_logs, timeoutMs) : undefined;
    return createFileListEnforcer({
      // The file is what HAProxy loads at its next start or reload; the runtime API is what it
      // enforces now. With a socket both are kept equal and no reload is needed.
      path: config.lb_logs,
      format: aclFileFormat,
      reloadCommand: runtime ? '' : config.lb_reload_command,
      reloadTimeoutMs: timeoutMs,
      capacity: config.options.max_entries,
      run: ctx.run ?? runShell,
      log: ctx.log.child({ enforcer: 'haproxy' }),
      ...(runtime ? { runtime, probe: async (signal?: AbortSignal) => void (await runtime.read(signal)) } : {}),
    });
  },
});
