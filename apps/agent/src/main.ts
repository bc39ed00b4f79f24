import { runCli } from './cli.ts';

// `run` keeps the process alive until a signal; every other command ends with its exit code.
const code = await runCli(process.argv.slice(2));
process.exit(code);
