import { hostname } from 'node:os';
import type { RampartClient } from '@rampart/client';
import { ReportedPlugin, type AgentCapabilities, type FeedbackAttestation } from '@rampart/contracts';
import type { PluginLogger } from '@rampart/plugin-kit';
import type { EnforcerWorker } from './enforcer-worker.ts';

export interface FeedbackDeps {
  client: RampartClient;
  gaid: () => string | undefined;
  /** Announced with each feedback. */
  capabilities?: () => AgentCapabilities;
  threshold: () => number;
  /** Entries the never-block list kept out of the last evaluation (IPv4). */
  protectedCount?: () => number;
  /** How often the agent reads its targets back. */
  reconcileSeconds?: () => number | undefined;
  log: PluginLogger;
}

/** The feedback in flight per enforcer instance: the next one waits for it (see sendFeedback). */
const inFlight = new WeakMap<object, Promise<void>>();

/**
 * `POST /agents/feedback` for one enforcer instance after each apply or replace: what it
 * enforces now and its state (also the agent's check-in). IPv4 instances report under their
 * label, the others as `<label>/<kind>` (`csv/url`), so the control plane sees every instance.
 *
 * The report is taken when this is called and sent after the instance's previous one has been
 * answered: a drift read back and its repair a moment later are two reports, and the server
 * keeps the last it receives, so they must reach it in the order they were taken.
 */
export function sendFeedback(deps: FeedbackDeps, w: EnforcerWorker<unknown>): Promise<void> {
  const agid = deps.gaid();
  if (!agid) return Promise.resolve();
  const plugin = ReportedPlugin.safeParse(w.label);
  if (!plugin.success) {
    deps.log.debug({ enforcer: w.label }, 'feedback not sent: not a reported plugin name');
    return Promise.resolve();
  }
  const state = w.currentState();
  const capabilities = deps.capabilities?.();
  const report = {
    agid,
    plugin: plugin.data,
    hostname: hostname(),
    code: state === 'ok' ? 0 : state,
    score_threshold: deps.threshold(),
    blacklist: w.enforced,
    state,
    ...(w.lastError !== undefined ? { error: w.lastError.slice(0, 500) } : {}),
    ...(capabilities ? { capabilities } : {}),
    ...attestationOf(deps, w),
  };
  const send = async (): Promise<void> => {
    try {
      await deps.client.agentFeedback(report, { retries: 1 });
    } catch (err) {
      deps.log.debug({ err, enforcer: w.label }, 'feedback not sent');
    }
  };
  const sent = (inFlight.get(w) ?? Promise.resolve()).then(send);
  inFlight.set(w, sent);
  return sent;
}

/** What the last read-back of the target found (nothing before the first one). */
function attestationOf(deps: FeedbackDeps, w: EnforcerWorker<unknown>): FeedbackAttestation {
  const a = w.attested;
  if (!a) return {};
  const capacity = w.enforcer.capacity;
  const reconcile = deps.reconcileSeconds?.();
  const kept = deps.protectedCount?.();
  return {
    expected: a.expected,
    held: a.held,
    held_digest: a.digest,
    cut: w.cut,
    ...(Number.isFinite(capacity) ? { capacity } : {}),
    ...(kept !== undefined ? { protected: kept } : {}),
    ...(reconcile !== undefined ? { reconcile_seconds: reconcile } : {}),
  };
}
