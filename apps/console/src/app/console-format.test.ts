import { describe, expect, it } from 'vitest';
import type { Ipv4Record } from '@rampart/contracts';
import { formatTime } from './components.tsx';
import { heldRecordFor } from './pages/lookup.tsx';
import { wgConfigName } from './pages/vpn.tsx';

const rec = (ip: string) => ({ ip }) as Ipv4Record;

describe('console helpers', () => {
  it('names a WireGuard file as wg-quick accepts it: at most 15 of [a-zA-Z0-9_=+.-], else rampart', () => {
    expect(wgConfigName('rampart')).toBe('rampart.conf');
    expect(wgConfigName('RMP-VID-0123456789ABCDEF')).toBe('RMP-VID-0123456.conf');
    expect(wgConfigName('alice smith/ü')).toBe('alicesmith.conf');
    expect(wgConfigName('ü ü')).toBe('rampart.conf');
    expect(wgConfigName(undefined)).toBe('rampart.conf');
  });

  it('answers a network look-up only with a record holding the whole network', () => {
    const body = [rec('185.220.101.0'), rec('185.220.101.0/25'), rec('185.220.101.0/24'), rec('185.220.0.0/16')];
    expect(heldRecordFor('185.220.101.0/24', body)?.ip).toBe('185.220.101.0/24');
    expect(heldRecordFor('185.220.101.0/23', body)?.ip).toBe('185.220.0.0/16');
    expect(heldRecordFor('185.220.101.0', body)?.ip).toBe('185.220.101.0');
    expect(heldRecordFor('185.220.101.0/24', [rec('185.220.101.0'), rec('185.220.101.0/25')])).toBeUndefined();
  });

  it('writes every date in one style with its time zone', () => {
    expect(formatTime(0)).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2} \S+$/);
    expect(formatTime('2026-11-26T14:05:00.000Z')).toBe(formatTime(Date.UTC(2026, 10, 26, 14, 5) / 1000));
    expect(formatTime(null)).toBe('—');
  });
});
