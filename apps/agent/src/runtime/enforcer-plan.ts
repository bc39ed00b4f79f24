/*
 * What happens to each enforcer slot when settings change: a pure function of the previous and
 * the next plan, so every transition is tested without a backend.
 *
 * A slot is one `ips.<label>` entry; its fingerprint is the plugin name and its validated
 * configuration. Rules a slot placed are owned by the instance that placed them: when the
 * configuration changes (an nft table renamed, a list file moved), only the old instance knows
 * where its rules are, so it withdraws them before it is closed and a new instance is created.
 * Closing alone would leave them in place forever.
 */

export interface SlotPlan {
  /** `running = yes`: enforcers hold the block set; `no`: every rule is withdrawn. */
  running: boolean;
  /** Label → fingerprint of every slot that has a live instance (previous) or is wanted (next). */
  slots: ReadonlyMap<string, string>;
}

export type SlotAction =
  /** The live instance removes every rule it placed (it stays open). */
  | 'withdraw'
  /** The live instance is released; its rules, if any are left, stay where they are. */
  | 'close'
  /** A new instance is built from the next plan's configuration. */
  | 'create'
  /** The (new or kept) instance receives the whole desired set at the next sync. */
  | 'hand_over';

export interface SlotStep {
  label: string;
  action: SlotAction;
}

/** Phases run in this order over all slots: nothing is created before every old rule is gone. */
const PHASES: readonly SlotAction[] = ['withdraw', 'close', 'create', 'hand_over'];

/**
 * The steps from `previous` to `next`, ordered by phase, then label. An unchanged slot under an
 * unchanged `running` has no step. Every withdraw precedes every create, so two slots that share
 * a target (a label moved to another plugin on the same file) never withdraw a new instance's rules.
 */
export function planEnforcerSlots(previous: SlotPlan, next: SlotPlan): SlotStep[] {
  const steps: SlotStep[] = [];
  const labels = [...new Set([...previous.slots.keys(), ...next.slots.keys()])].sort();
  for (const label of labels) {
    const before = previous.slots.get(label);
    const after = next.slots.get(label);
    const add = (...actions: SlotAction[]) => actions.forEach((action) => steps.push({ label, action }));
    if (before === undefined) {
      // Added (or its earlier creation failed): build it; it holds rules only while running.
      add('create', ...(next.running ? (['hand_over'] as const) : []));
    } else if (after === undefined) {
      add('withdraw', 'close');
    } else if (before !== after) {
      add('withdraw', 'close', 'create', ...(next.running ? (['hand_over'] as const) : []));
    } else if (previous.running && !next.running) {
      add('withdraw');
    } else if (!previous.running && next.running) {
      add('hand_over');
    }
  }
  return steps.sort((a, b) => PHASES.indexOf(a.action) - PHASES.indexOf(b.action) || (a.label < b.label ? -1 : a.label > b.label ? 1 : 0));
}
