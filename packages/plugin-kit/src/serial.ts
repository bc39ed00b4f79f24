import { abortable } from './abort.ts';

/**
 * Runs the async functions it is given one at a time, in call order: an enforcer whose `sync`
 * and `apply` interleave would compute a diff against a model the other is replacing. A failure
 * rejects only its own call. A call whose `signal` aborts while it waits for its turn rejects at
 * once and never runs; one aborted while running rejects at once too (its function is expected
 * to pass the signal on, and the next call waits until it really ended).
 */
export function serializer(): <T>(fn: () => Promise<T>, signal?: AbortSignal) => Promise<T> {
  let tail: Promise<unknown> = Promise.resolve();
  return <T>(fn: () => Promise<T>, signal?: AbortSignal): Promise<T> => {
    const turn = () => {
      signal?.throwIfAborted();
      return fn();
    };
    const run = tail.then(turn, turn);
    tail = run.catch(() => undefined);
    return abortable(run, signal);
  };
}
