/** A benchmark's command line (what follows `npx tsx bench/<name>.ts`). */
export const args = process.argv.slice(2);

/** The number given after `--<name>`, else `fallback`; a value that is not a number stops the bench. */
export function flag(name: string, fallback: number): number {
  const i = args.indexOf(`--${name}`);
  if (i < 0) return fallback;
  const value = Number(args[i + 1]);
  if (!Number.isFinite(value)) throw new Error(`--${name} needs a number, not ${JSON.stringify(args[i + 1])}`);
  return value;
}
