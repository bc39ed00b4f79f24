/**
 * Runs the async functions it is given one at a time, in call order: an enforcer whose `sync`
 * and `apply` interleave would compute a diff against a model the other is replacing. A failure
 * rejects only its own call.
 */
export function serializer(): <T>(fn: () => Promise<T>) => Promise<T> {
  let tail: Promise<unknown> = Promise.resolve();
  return <T>(fn: () => Promise<T>): Promise<T> => {
    const run = tail.then(fn, fn);
    tail = run.catch(() => undefined);
    return run;
  };
}
