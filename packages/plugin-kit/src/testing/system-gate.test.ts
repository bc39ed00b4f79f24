import { afterEach, describe, expect, it, vi } from 'vitest';
import { missingSystem, systemGate } from './system-gate.ts';

describe('systemGate', () => {
  const ci = process.env.CI;
  afterEach(() => {
    if (ci === undefined) delete process.env.CI;
    else process.env.CI = ci;
    vi.restoreAllMocks();
  });

  it('names what is missing', () => {
    expect(missingSystem({ commands: ['sh', 'rampart-no-such-tool'] })).toBe('missing rampart-no-such-tool');
    expect(missingSystem({ commands: ['sh'] })).toBeUndefined();
  });

  it('skips with the reason printed locally, and throws under CI', () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
    delete process.env.CI;
    expect(systemGate('demo', { commands: ['rampart-no-such-tool'] })).toBe(true);
    expect(warn).toHaveBeenCalledWith('[skip] demo: missing rampart-no-such-tool');
    process.env.CI = 'true';
    expect(() => systemGate('demo', { commands: ['rampart-no-such-tool'] })).toThrow('demo: cannot run under CI: missing rampart-no-such-tool');
    expect(systemGate('demo', { commands: ['sh'] })).toBe(false);
  });
});
