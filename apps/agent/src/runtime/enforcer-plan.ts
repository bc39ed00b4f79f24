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
  /**
   * The instance removes every rule it placed (it stays open). After `create` (not running):
   * the new instance clears what a previous run of the same configuration left in its target.
   */
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

/**
 * Phases, run in this order over all slots: old instances withdraw, old instances close, new
 * instances are created, then new or kept instances get the set (or, not running, clear their
 * target). Nothing is created before every old rule is gone.
 */
const OLD_WITHDRAW = 0;
const CLOSE = 1;
const CREATE = 2;
const SETTLE = 3;

/**
 * The steps from `previous` to `next`, ordered by phase, then label. An unchanged slot under an
 * unchanged `running` has no step. Every withdraw precedes every create, so two slots that share
 * a target (a label moved to another plugin on the same file) never withdraw a new instance's rules.
 */
export function planEnforcerSlots(previous: SlotPlan, next: SlotPlan): SlotStep[] {
  const steps: (SlotStep & { phase: number })[] = [];
  const labels = [...new Set([...previous.slots.keys(), ...next.slots.keys()])].sort();
  for (const label of labels) {
    const before = previous.slots.get(label);
    const after = next.slots.get(label);
    const add = (phase: number, action: SlotAction) => steps.push({ label, action, phase });
    // A new instance holds the set while running; otherwise it clears its target.
    const settleNew = () => add(SETTLE, next.running ? 'hand_over' : 'withdraw');
    if (before === undefined) {
      // Added, or its earlier creation failed.
      add(CREATE, 'create');
      settleNew();
    } else if (after === undefined) {
      add(OLD_WITHDRAW, 'withdraw');
      add(CLOSE, 'close');
    } else if (before !== after) {
      add(OLD_WITHDRAW, 'withdraw');
      add(CLOSE, 'close');
      add(CREATE, 'create');
      settleNew();
    } else if (previous.running && !next.running) {
      add(OLD_WITHDRAW, 'withdraw');
    } else if (!previous.running && next.running) {
      add(SETTLE, 'hand_over');
    }
  }
  steps.sort((a, b) => a.phase - b.phase || (a.label < b.label ? -1 : a.label > b.label ? 1 : 0));
  return steps.map(({ label, action }) => ({ label, action }));
}
