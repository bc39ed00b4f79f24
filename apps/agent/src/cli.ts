import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Command, Option } from 'commander';
import { AGENT_VERSION, DEFAULT_CONFIG_PATH } from './defaults.ts';
import type { AgentFileConfig, ConfigProblem } from './config/load.ts';
import type { Registry } from './registry.ts';

/*
 * Each command loads what it needs when it runs: `parse` (a source's parser over a log) must not
 * carry the daemon, every enforcer plugin and their schemas (~20 MB of heap), and `run` loads
 * them once it starts.
 */
const registryOf = async (given: Registry | undefined): Promise<Registry> => given ?? (await import('./registry.ts')).REGISTRY;

export interface CliIo {
  out(text: string): void;
  err(text: string): void;
  env: Record<string, string | undefined>;
}

const defaultIo: CliIo = {
  out: (t) => process.stdout.write(t),
  err: (t) => process.stderr.write(t),
  env: process.env,
};

function printProblems(io: CliIo, file: string, problems: ConfigProblem[]): void {
  io.err(`${file}: ${problems.length} problem${problems.length === 1 ? '' : 's'}\n`);
  for (const p of problems) io.err(`  ${p.path || '(root)'}: ${p.message}\n`);
}

async function loadOrExit(path: string, io: CliIo, registry: Registry): Promise<AgentFileConfig> {
  const { readAgentConfig } = await import('./config/read.ts');
  const { config, problems } = await readAgentConfig(path, io.env, registry);
  if (!config) {
    printProblems(io, path, problems);
    throw new ExitError(2);
  }
  return config;
}

export class ExitError extends Error {
  constructor(readonly code: number) {
    super(`exit ${code}`);
  }
}

/** `registry` defaults to every plugin of this build (registry.ts), loaded by the command that needs it. */
export function buildCli(io: CliIo = defaultIo, given?: Registry): Command {
  const program = new Command('rampart-agent')
    .description('Rampart agent: reads detection sources, reports attackers, enforces the block list')
    .version(AGENT_VERSION)
    .exitOverride()
    .configureOutput({ writeOut: io.out, writeErr: io.err });
  const configOption = () => new Option('-c, --config <file>', 'agent configuration file').env('RAMPART_AGENT_CONFIG').default(DEFAULT_CONFIG_PATH);

  program
    .command('run')
    .description('run the agent until SIGTERM/SIGINT; SIGHUP reloads the configuration file')
    .addOption(configOption())
    .action(async (opts: { config: string }) => {
      const registry = await registryOf(given);
      const file = await loadOrExit(opts.config, io, registry);
      const [{ Agent }, { createLogger }, { secretKeysOfRegistry }, { readAgentConfig }] = await Promise.all([
        import('./agent.ts'),
        import('./runtime/logger.ts'),
        import('./registry.ts'),
        import('./config/read.ts'),
      ]);
      const log = createLogger(file.local.log_level, undefined, secretKeysOfRegistry(registry));
      const agent = new Agent({ file, log });
      await agent.start();
      await new Promise<void>((resolve) => {
        let stopping = false;
        const stop = (signal: string) => {
          if (stopping) return;
          stopping = true;
          log.info({ signal }, 'stopping');
          const force = setTimeout(() => process.exit(1), 30_000);
          force.unref();
          agent.stop().then(resolve, (err: unknown) => {
            log.error({ err }, 'stop failed');
            resolve();
          });
        };
        process.on('SIGTERM', () => stop('SIGTERM'));
        process.on('SIGINT', () => stop('SIGINT'));
        process.on('SIGHUP', () => {
          void readAgentConfig(opts.config, process.env, registry).then(({ config, problems }) => {
            if (!config) log.error({ problems }, 'configuration not reloaded: it has problems');
            else {
              log.info({ file: opts.config }, 'configuration reloaded');
              agent.reload(config);
            }
          });
        });
      });
    });

  program
    .command('validate-config <file>')
    .description('check a configuration file; lists every problem and exits non-zero when there is one (no network, no changes)')
    .action(async (path: string) => {
      let text: string;
      try {
        text = await readFile(path, 'utf8');
      } catch (err) {
        io.err(`${path}: cannot read: ${(err as Error).message}\n`);
        throw new ExitError(2);
      }
      const { validateAgentText } = await import('./config/read.ts');
      const { config, problems } = validateAgentText(text, io.env, await registryOf(given));
      if (!config) {
        printProblems(io, path, problems);
        throw new ExitError(1);
      }
      const active = (group: Record<string, unknown> | undefined) =>
        Object.entries(group ?? {})
          .filter(([, e]) => (e as { active?: boolean }).active)
          .map(([k]) => k);
      io.out(`${path}: valid (agent ${config.settings.gaid}; sources: ${active(config.settings.ids).join(', ') || 'none'}; enforcers: ${active(config.settings.ips).join(', ') || 'none'})\n`);
    });

  program
    .command('print-config')
    .description('print the settings the agent runs with (file merged with the last server document), secrets redacted')
    .addOption(configOption())
    .action(async (opts: { config: string }) => {
      const registry = await registryOf(given);
      const file = await loadOrExit(opts.config, io, registry);
      const [{ maskSecrets }, { secretKeysOfRegistry }] = await Promise.all([import('@rampart/contracts'), import('./registry.ts')]);
      let settings: unknown = file.settings;
      let organization: unknown;
      let origin = 'local';
      try {
        const saved = JSON.parse(await readFile(join(file.local.state_dir, 'settings.json'), 'utf8')) as { settings?: { gaid?: string }; organization?: unknown };
        if (saved.settings?.gaid === file.settings.gaid) {
          settings = saved.settings;
          origin = 'server';
        }
        organization = saved.organization;
      } catch {
        // no server document yet
      }
      const merged = { control_plane_url: file.controlPlaneUrl, settings_origin: origin, ...(settings as object), organization, local: file.local };
      io.out(`${JSON.stringify(maskSecrets(merged, secretKeysOfRegistry(registry)), null, 2)}\n`);
    });

  program
    .command('register')
    .description('register this agent (POST /agents) with an admin key and save an agent key for `run`')
    .addOption(configOption())
    .addOption(new Option('--admin-key-env <name>', 'environment variable holding an organization admin API key').default('RAMPART_ADMIN_KEY'))
    .option('--token-ttl-days <days>', 'expiry of the issued agent key', (v) => Number.parseInt(v, 10))
    .option('--no-token', 'register only; do not issue an agent key')
    .option('--rotate', 'issue a new key even when one is live, and revoke every other live key of this agent')
    .action(async (opts: { config: string; adminKeyEnv: string; tokenTtlDays?: number; token: boolean; rotate?: boolean }) => {
      const file = await loadOrExit(opts.config, io, await registryOf(given));
      const { LiveKeysError, registerAgent } = await import('./commands/register.ts');
      const adminKey = io.env[opts.adminKeyEnv];
      if (!adminKey) {
        io.err(`register: set ${opts.adminKeyEnv} to an organization admin API key\n`);
        throw new ExitError(2);
      }
      try {
        await registerAgent(file, { adminKey, issueToken: opts.token, rotate: opts.rotate === true, ...(opts.tokenTtlDays ? { tokenTtlDays: opts.tokenTtlDays } : {}) }, (line) => io.out(`${line}\n`));
      } catch (err) {
        if (!(err instanceof LiveKeysError)) throw err;
        io.err(`register: ${err.message}\n`);
        throw new ExitError(3);
      }
    });

  program
    .command('install')
    .description('place the agent, its wrapper, the systemd unit, agent.env and a sample agent.json that validates; daemon-reload where systemd runs; register when given --server and an admin key')
    .option('--root <dir>', 'install into this root directory (a package build, an image)', '/')
    .option('--prefix <dir>', 'where lib/rampart-agent and bin/rampart-agent go', '/usr')
    .option('--server <url>', 'control-plane API base (…/api/v1) for a new agent.json, and to register with')
    .option('--gaid <id>', 'agent id for a new agent.json (default: RMP-AGENT-ID- and the host name)')
    .option('--node <path>', 'official Node.js binary (>= 22) copied to <prefix>/lib/rampart-agent/node/bin/node, which the wrapper and unit run (default: the one running this)', process.execPath)
    .addOption(new Option('--admin-key-env <name>', 'environment variable holding an organization admin API key').default('RAMPART_ADMIN_KEY'))
    .action(async (opts: { root: string; prefix: string; server?: string; gaid?: string; node: string; adminKeyEnv: string }) => {
      const adminKey = io.env[opts.adminKeyEnv];
      const registry = await registryOf(given);
      const [{ installAgent, InstallError }, { LiveKeysError }] = await Promise.all([import('./commands/install.ts'), import('./commands/register.ts')]);
      try {
        const code = await installAgent(
          { root: opts.root, prefix: opts.prefix, node: opts.node, adminKeyEnv: opts.adminKeyEnv, env: io.env, registry, cli: import.meta.url, ...(opts.server ? { server: opts.server } : {}), ...(opts.gaid ? { gaid: opts.gaid } : {}), ...(adminKey ? { adminKey } : {}) },
          (line) => io.out(`${line}\n`),
        );
        if (code !== 0) throw new ExitError(code);
      } catch (err) {
        if (err instanceof InstallError) {
          io.err(`install: ${err.message}\n`);
          throw new ExitError(2);
        }
        if (!(err instanceof LiveKeysError)) throw err;
        io.err(`install: ${err.message}\n`);
        throw new ExitError(3);
      }
    });

  program
    .command('status')
    .description('what is enforced, the last sync and the spool depth (from the running agent, else from the state directory)')
    .addOption(configOption())
    .action(async (opts: { config: string }) => {
      const file = await loadOrExit(opts.config, io, await registryOf(given));
      const { agentStatus } = await import('./commands/status.ts');
      const { source, status } = await agentStatus(file);
      io.out(`${JSON.stringify({ from: source, ...status }, null, 2)}\n`);
    });

  program
    .command('parse')
    .description("run one source's parser over a file or stdin; one JSON line per detection, a summary on stderr")
    .requiredOption('--source <label>', 'ids label of the source, e.g. ssh_log')
    .addOption(new Option('--mode <mode>', 'detection mode').choices(['normal', 'aggressive']).default('normal'))
    .option('--config <json>', 'an ids.<label> entry as JSON, instead of the parse defaults')
    .option('--reports', "print what the agent would report after the source's policy (one JSON line per report: ip, ts, confidence, notes)")
    .argument('[file]', 'file to read, or - for stdin', '-')
    .action(async (file: string, opts: { source: string; mode: 'normal' | 'aggressive'; config?: string; reports?: boolean }) => {
      const { parseCommand } = await import('./commands/parse.ts');
      const code = await parseCommand(
        { source: opts.source, mode: opts.mode, file, ...(opts.config ? { config: opts.config } : {}), ...(opts.reports ? { reports: true } : {}) },
        { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr },
      );
      if (code !== 0) throw new ExitError(code);
    });

  return program;
}

/** Runs the CLI; resolves with the exit code. */
export async function runCli(argv: string[], io: CliIo = defaultIo, registry?: Registry): Promise<number> {
  const program = buildCli(io, registry);
  try {
    await program.parseAsync(argv, { from: 'user' });
    return 0;
  } catch (err) {
    if (err instanceof ExitError) return err.code;
    const code = (err as { code?: string; exitCode?: number }).code;
    if (typeof code === 'string' && code.startsWith('commander.')) {
      return code === 'commander.helpDisplayed' || code === 'commander.version' ? 0 : ((err as { exitCode?: number }).exitCode ?? 2);
    }
    io.err(`rampart-agent: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
}
