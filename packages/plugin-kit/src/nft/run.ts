import { runArgv } from '../exec.ts';
import type { CommandResult } from '../shell.ts';

/** Runs `nft` with the given arguments, inside `netns` when one is configured. */
export function nftRunner(netns: string, timeoutMs: number) {
  const prefix = netns ? ['ip', 'netns', 'exec', netns, 'nft'] : ['nft'];
  return (args: readonly string[], input?: string, signal?: AbortSignal): Promise<CommandResult> =>
    runArgv([...prefix, ...args], { input, timeoutMs, ...(signal ? { signal } : {}) });
}

export type NftRunner = ReturnType<typeof nftRunner>;

/** `nft` says this when the table (or a set in it) does not exist. */
export function isMissing(result: CommandResult): boolean {
  return result.code !== 0 && /No such file or directory|does not exist/.test(result.stderr);
}
