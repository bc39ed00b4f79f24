import type { RampartClient } from '@rampart/client';
import type { AgentFeedbackBody } from '@rampart/contracts';
import { silentLogger as log } from '@rampart/plugin-kit/testing';
import { describe, expect, it } from 'vitest';
import type { EnforcerWorker } from './enforcer-worker.ts';
import { sendFeedback } from './feedback.ts';

/** A worker as sendFeedback reads it: what it holds is set by the test between reports. */
function worker(held: number) {
  const w = {
    label: 'packet_filter',
    enforced: 1,
    cut: 0,
    lastError: undefined,
    enforcer: { capacity: Number.POSITIVE_INFINITY },
    attested: { held, digest: 'd', expected: 1, differs: held !== 1, at: 0 },
    currentState: () => 'ok' as const,
  };
  return w as typeof w & EnforcerWorker<unknown>;
}

describe('sendFeedback', () => {
  it('reaches the server in the order the reports were taken, even when the first answer is slow', async () => {
    const received: number[] = [];
    let calls = 0;
    const client = {
      async agentFeedback(body: AgentFeedbackBody) {
        // The first report (the drift) is answered late, the second (the repair) at once: sent
        // side by side, the server would keep the drift as the last word.
        const delay = calls++ === 0 ? 50 : 0;
        await new Promise((r) => setTimeout(r, delay));
        received.push(body.held!);
      },
    } as unknown as RampartClient;
    const deps = { client, gaid: () => 'g', threshold: () => 0, log };
    const w = worker(0);
    const drift = sendFeedback(deps, w);
    w.attested = { ...w.attested, held: 1, differs: false };
    const repair = sendFeedback(deps, w);
    await Promise.all([drift, repair]);
    expect(received).toEqual([0, 1]);
  });

  it('a report that fails does not hold back the next', async () => {
    const received: number[] = [];
    let calls = 0;
    const client = {
      async agentFeedback(body: AgentFeedbackBody) {
        if (calls++ === 0) throw new Error('ECONNRESET');
        received.push(body.held!);
      },
    } as unknown as RampartClient;
    const deps = { client, gaid: () => 'g', threshold: () => 0, log };
    const w = worker(1);
    await Promise.all([sendFeedback(deps, w), sendFeedback(deps, w)]);
    expect(received).toEqual([1]);
  });
});
