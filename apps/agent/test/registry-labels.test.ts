import { describe, expect, it } from 'vitest';
import { REPORTED_PLUGIN_NAMES } from '@rampart/contracts';
import { ENFORCERS, SOURCES } from '../src/registry.ts';

describe('registry labels', () => {
  it('are all names the control plane takes in feedback and sync state (else it answers 400 or ignores the state)', () => {
    for (const label of [...ENFORCERS.keys(), ...SOURCES.keys()]) expect(REPORTED_PLUGIN_NAMES, label).toContain(label);
  });
});
