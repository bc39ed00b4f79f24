import { Command, InvalidArgumentError } from 'commander';
import { run } from './commands.ts';
import { DataDirLockedError } from '../store/index.ts';
import { registerAgentCommands } from './agent-commands.ts';
import { registerArchiveCommands } from './archive-commands.ts';
import { registerChangeCommands } from './change-commands.ts';
import { registerImportCommand } from './import-command.ts';
import { registerListCommands } from './list-commands.ts';

/** `rampart`: the operators' command line. Every command talks to the store directly. */
const program = new Command('rampart')
  .description('Rampart control-plane operator tool (uses DATABASE_URL, or the embedded store under DATA_DIR)')
  .showHelpAfterError()
  .exitOverride();

function number(min: number, max: number, integer: boolean) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isFinite(n) || n < min || n > max || (integer && !Number.isInteger(n))) {
      throw new InvalidArgumentError(`expected ${integer ? 'an integer' : 'a number'} from ${min} to ${max}`);
    }
    return n;
  };
}

const org = program.command('org').description('manage organizations');
org
  .command('create')
  .description('create an organization')
  .requiredOption('--name <name>', 'organization name (unique)')
  .option('--trust <0..1>', 'trust level', number(0, 1, false), 0.5)
  .option('--credits <coins>', 'coins granted at creation', number(0, Number.MAX_SAFE_INTEGER, true), 0)
  .option('--delay <seconds>', 'seconds by which the organization sees new indicators late', '0')
  .action((opts) => run({ cmd: 'org.create', ...opts }));
org
  .command('grant-coins')
  .description('add coins to an organization (credit_tokens)')
  .argument('<gid>', 'organization id (RMP-GID-...)')
  .argument('<coins>', 'coins to add', number(1, Number.MAX_SAFE_INTEGER, true))
  .action((gid, coins) => run({ cmd: 'org.grant', gid, coins }));
org
  .command('set-trust')
  .description("set an organization's trust level")
  .argument('<gid>', 'organization id (RMP-GID-...)')
  .argument('<trust>', 'trust from 0 to 1', number(0, 1, false))
  .action((gid, trust) => run({ cmd: 'org.trust', gid, trust }));

const user = program.command('user').description('manage users');
user
  .command('create')
  .description('create a user in an organization')
  .requiredOption('--org <gid>', 'organization id (RMP-GID-...)')
  .requiredOption('--username <email>', 'e-mail address (unique)')
  .requiredOption('--role <role>', 'role: 1 reader, 2 contributor, 3 admin, 9 operator', number(1, 9, true))
  .option('--name <name>', 'given name', '')
  .option('--surname <surname>', 'family name', '')
  .action((opts) => run({ cmd: 'user.create', ...opts }));

const key = program.command('key').description('manage API keys');
key
  .command('create')
  .description('issue an API key for a user (printed once)')
  .requiredOption('--username <email>', 'the user the key acts as')
  .option('--label <label>', 'what the key is for', '')
  .action((opts) => run({ cmd: 'key.create', ...opts }));
key
  .command('revoke')
  .description('revoke an API key by its id (the 12 hex characters after rmp_)')
  .argument('<key_id>', 'key id')
  .action((keyId) => run({ cmd: 'key.revoke', keyId }));

program
  .command('cdn')
  .description('well-known CDN ranges')
  .command('refresh')
  .description("fetch the providers' published lists into DATA_DIR/cdn-ranges.json (URLs: the data file, or CDN_REFRESH_SOURCES); servers read it at start")
  .option('--timeout <ms>', 'per-request timeout', number(100, 120_000, true), 15_000)
  .action((opts) => run({ cmd: 'cdn.refresh', timeout: opts.timeout }));

const agent = registerAgentCommands(program);
const { decision } = registerListCommands(program, { org, user, key, agent });
registerChangeCommands({ agent, decision });
registerArchiveCommands(program);
registerImportCommand(program);

program.command('migrate').description('apply pending database migrations').action(() => run({ cmd: 'migrate' }));
program
  .command('openapi')
  .description('write the OpenAPI document generated from the contracts')
  .option('--out <file>', 'file to write (default: standard output)')
  .action((opts) => run({ cmd: 'openapi', ...opts }));

try {
  await program.parseAsync(process.argv);
} catch (err) {
  const code = (err as { exitCode?: number }).exitCode;
  // commander has already printed its own message (help, usage errors).
  if (typeof code === 'number') process.exit(code);
  if (err instanceof DataDirLockedError && err.holder.owner === 'server') {
    process.stderr.write(
      `rampart: ${err.message}. The embedded store takes one process at a time: stop the server first, or do this through its API with an admin key (e.g. POST /api/v1/keys to create an API key).\n`,
    );
    process.exit(3);
  }
  process.stderr.write(`rampart: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
}
