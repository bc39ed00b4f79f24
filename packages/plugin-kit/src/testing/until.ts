/*
 * The one way tests wait (no fixed sleeps): poll a condition until it holds or a deadline passes,
 * then fail naming what was awaited and the last error the check threw.
 */

/**
 * Polls `check` every `everyMs` until it gives a value other than undefined, null or false, and
 * returns that value; a check that throws is tried again. Past `timeoutMs` it throws
 * "timed out waiting for <what>" with the last error.
 */
export async function until<T>(what: string, check: () => T | undefined | null | false | Promise<T | undefined | null | false>, timeoutMs = 10_000, everyMs = 20): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined && value !== null && value !== false) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last === undefined ? '' : `: ${last instanceof Error ? last.message : JSON.stringify(last)}`}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** `until` for a yes/no condition, in the order the plugin tests use: check first. */
export async function waitFor(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  await until(what, check, timeoutMs, 50);
}
