import type { AgentSettingsDocument, FeedbackAttestation } from '@rampart/contracts';
import type { EnforcedEntry, StoredAttestation } from '../../store/index.ts';

/** Reconcile interval assumed for an agent that did not report its own (rampart-agent's default). */
export const DEFAULT_RECONCILE_SECONDS = 60;

/**
 * What the server expects one enforcer of an agent to hold: its list at the agent's threshold
 * (`listed`), less what the agent's never-block list keeps out, capped at `maximum_rules` and
 * the enforcer's capacity; nothing while the agent is told not to run. What the caps leave out
 * is the `cut`: shown, never a drift.
 */
export function serverExpectation(
  document: Pick<AgentSettingsDocument, 'maximum_rules' | 'running'>,
  listed: number,
  reported: Pick<FeedbackAttestation, 'protected' | 'capacity'>,
): { server_expected: number; cut: number } {
  if (document.running === 'no') return { server_expected: 0, cut: 0 };
  const wanted = Math.max(0, listed - (reported.protected ?? 0));
  const server_expected = Math.min(wanted, document.maximum_rules, reported.capacity ?? Number.POSITIVE_INFINITY);
  return { server_expected, cut: wanted - server_expected };
}

/** The attestation to store for a report that carries `held`: drift starts at the first mismatch and lasts until one agrees. */
export function attestation(
  previous: EnforcedEntry | undefined,
  document: Pick<AgentSettingsDocument, 'maximum_rules' | 'running'>,
  listed: number,
  reported: FeedbackAttestation & { held: number },
  now: number,
): StoredAttestation {
  const { server_expected, cut } = serverExpectation(document, listed, reported);
  const differs = reported.held !== server_expected;
  const before = previous?.attestation;
  const ended = !differs && before?.drift_since != null ? { since: before.drift_since, until: now, held: before.held, server_expected: before.server_expected } : null;
  return {
    expected: reported.expected ?? null,
    held: reported.held,
    held_digest: reported.held_digest ?? null,
    listed,
    server_expected,
    cut,
    drift_since: differs ? (previous?.attestation?.drift_since ?? now) : null,
    reconcile_seconds: reported.reconcile_seconds ?? null,
    last_drift: ended ?? before?.last_drift ?? null,
  };
}

/** Drifting: held has differed from the server's figure for longer than one sync interval plus one reconcile. */
export function isDrifting(entry: Pick<EnforcedEntry, 'attestation'>, syncTimeMinutes: number, now: number): boolean {
  const a = entry.attestation;
  if (!a || a.drift_since === null) return false;
  return now - a.drift_since > syncTimeMinutes * 60 + (a.reconcile_seconds ?? DEFAULT_RECONCILE_SECONDS);
}
