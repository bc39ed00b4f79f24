import { describe, expect, it } from 'vitest';
import { planEnforcerSlots, type SlotPlan } from '../src/runtime/enforcer-plan.ts';

const plan = (running: boolean, slots: Record<string, string>): SlotPlan => ({ running, slots: new Map(Object.entries(slots)) });
const steps = (previous: SlotPlan, next: SlotPlan) => planEnforcerSlots(previous, next).map((s) => `${s.action} ${s.label}`);

describe('planEnforcerSlots', () => {
  it('unchanged: nothing to do', () => {
    expect(steps(plan(true, { packet_filter: 'a' }), plan(true, { packet_filter: 'a' }))).toEqual([]);
    expect(steps(plan(false, { packet_filter: 'a' }), plan(false, { packet_filter: 'a' }))).toEqual([]);
  });

  it('added: created, and handed the set while running; not running, it clears what a previous run left', () => {
    expect(steps(plan(true, {}), plan(true, { csv: 'c' }))).toEqual(['create csv', 'hand_over csv']);
    expect(steps(plan(false, {}), plan(false, { csv: 'c' }))).toEqual(['create csv', 'withdraw csv']);
    // An agent that starts with running = no.
    expect(steps(plan(true, {}), plan(false, { csv: 'c' }))).toEqual(['create csv', 'withdraw csv']);
  });

  it('removed: withdraws what it placed, then closes', () => {
    expect(steps(plan(true, { csv: 'c' }), plan(true, {}))).toEqual(['withdraw csv', 'close csv']);
    expect(steps(plan(false, { csv: 'c' }), plan(false, {}))).toEqual(['withdraw csv', 'close csv']);
  });

  it('configuration changed: the old instance withdraws its rules before the new one is created', () => {
    expect(steps(plan(true, { packet_filter: 'table rampart' }), plan(true, { packet_filter: 'table rampart2' }))).toEqual([
      'withdraw packet_filter',
      'close packet_filter',
      'create packet_filter',
      'hand_over packet_filter',
    ]);
    expect(steps(plan(false, { packet_filter: 'x' }), plan(false, { packet_filter: 'y' }))).toEqual([
      'withdraw packet_filter',
      'close packet_filter',
      'create packet_filter',
      'withdraw packet_filter',
    ]);
  });

  it('running yes → no withdraws every slot; no → yes hands every slot the set again', () => {
    const slots = { csv: 'c', packet_filter: 'p' };
    expect(steps(plan(true, slots), plan(false, slots))).toEqual(['withdraw csv', 'withdraw packet_filter']);
    expect(steps(plan(false, slots), plan(true, slots))).toEqual(['hand_over csv', 'hand_over packet_filter']);
  });

  it('running no → yes with a new slot creates it and hands it the set', () => {
    expect(steps(plan(false, { csv: 'c' }), plan(true, { csv: 'c', dry_run: 'd' }))).toEqual(['create dry_run', 'hand_over csv', 'hand_over dry_run']);
  });

  it('running yes → no with a changed slot: the old instance withdraws, the new one clears its target', () => {
    expect(steps(plan(true, { csv: 'a' }), plan(false, { csv: 'b' }))).toEqual(['withdraw csv', 'close csv', 'create csv', 'withdraw csv']);
  });

  it('withdraws every old rule before creating anything, across slots', () => {
    expect(steps(plan(true, { a: '1', b: '1', c: '1' }), plan(true, { a: '2', c: '1', d: '1' }))).toEqual([
      'withdraw a',
      'withdraw b',
      'close a',
      'close b',
      'create a',
      'create d',
      'hand_over a',
      'hand_over d',
    ]);
  });
});
