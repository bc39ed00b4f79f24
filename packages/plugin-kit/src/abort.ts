/**
 * Cancellation helpers for enforcers. Every enforcer method takes an `AbortSignal`: the agent
 * aborts it when the call's own timeout passes, when the slot is withdrawn or replaced, or when
 * the agent stops. A plugin passes it on to what it waits for (child processes, fetch, SSH
 * channels, SDK calls) and checks it between steps.
 */

/** Throws the signal's reason when it is aborted (no-op without a signal). */
export function throwIfAborted(signal: AbortSignal | undefined): void {
  signal?.throwIfAborted();
}

/**
 * Settles like `promise`, or rejects with the signal's reason as soon as it aborts, whichever is
 * first. For waits that cannot be cancelled themselves (a queue turn, a library without signals):
 * the caller is released; the work, if any, finishes in the background.
 */
export function abortable<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) {
    promise.catch(() => undefined);
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => {
      promise.catch(() => undefined);
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}

/** Waits `ms`, or rejects with the signal's reason when it aborts first (the timer is cleared). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
