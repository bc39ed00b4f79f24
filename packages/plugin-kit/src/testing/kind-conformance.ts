import { describe, expect, it } from 'vitest';
import type { BlockEntry } from '../enforcer.ts';
import { codecOf, type IndicatorKind } from '../kinds.ts';
import type { ConformanceSettings, EnforcerFactory } from './enforcer-conformance.ts';

/*
 * The conformance suite for an enforcer of domains, URLs or file digests (an instance created
 * with `ctx.kind`): what `list()` reads back from the real target equals, in the kind's canonical
 * form and order (kinds.ts), what the calls before it should have left there. The IPv4 suite is
 * enforcer-conformance.ts.
 */

type NamedKind = Exclude<IndicatorKind, 'ipv4'>;

/** Deterministic canonical values of a kind, with scores 100..999. */
export function conformanceValues(kind: NamedKind, count: number, offset = 0): BlockEntry[] {
  return Array.from({ length: count }, (_, i) => {
    const n = i + offset;
    const value =
      kind === 'domain' ? `host-${n}.conformance.example` : kind === 'url' ? `http://conformance.example/path/${n}?q=a,b` : n.toString(16).toUpperCase().padStart(64, '0');
    return { value, score: 100 + (n % 900) };
  });
}

/** Spellings of the same indicators that canonicalize to `conformanceValues(kind, 2)`, and text that is not of the kind at all. */
function spellings(kind: NamedKind): { same: string[]; invalid: string[] } {
  const [a, b] = conformanceValues(kind, 2).map((e) => e.value) as [string, string];
  if (kind === 'domain') return { same: [a.toUpperCase(), `${b}.`], invalid: ['localhost', '203.0.113.9', 'a..b.example', 'exa mple.com'] };
  if (kind === 'url') return { same: [a.replace('http://conformance.example', 'HTTP://Conformance.Example:80') + '#frag', b], invalid: ['not a url', 'javascript:alert(1)', 'file:///etc/passwd'] };
  return { same: [a.toLowerCase(), ` ${b} `], invalid: ['g'.repeat(64), 'a'.repeat(63), 'md5:' + 'a'.repeat(32)] };
}

export function kindConformance(name: string, kind: NamedKind, factory: EnforcerFactory, settings: ConformanceSettings = {}): void {
  const codec = codecOf(kind);
  const sorted = (entries: BlockEntry[]) => [...new Set(entries.map((e) => e.value))].sort(codec.compare);
  const test = (title: string, capacity: number | undefined, body: (s: Awaited<ReturnType<EnforcerFactory>>) => Promise<void>) =>
    it(
      title,
      async () => {
        const subject = await factory(capacity ? { capacity } : {});
        try {
          await body(subject);
        } finally {
          try {
            await subject.enforcer.withdraw();
            await subject.enforcer.close();
          } finally {
            await subject.teardown?.();
          }
        }
      },
      settings.timeoutMs,
    );

  describe(`enforcer conformance (${kind}): ${name}`, () => {
    test('sync, apply and withdraw read back exactly, in canonical order', undefined, async ({ enforcer }) => {
      expect(await enforcer.healthcheck()).toMatchObject({ ok: true });
      const start = conformanceValues(kind, settings.bulkSize ?? 200);
      expect(await enforcer.sync(start)).toMatchObject({ enforced: start.length, cut: 0 });
      expect(await enforcer.list()).toEqual(sorted(start));
      const add = conformanceValues(kind, 3, 10_000);
      const after = [...start.slice(2), ...add];
      expect(await enforcer.apply({ add, remove: [start[0]!.value, start[1]!.value] })).toMatchObject({ enforced: after.length });
      expect(await enforcer.list()).toEqual(sorted(after));
      // Applying the same diff again changes nothing.
      await enforcer.apply({ add, remove: [start[0]!.value, start[1]!.value] });
      expect(await enforcer.list()).toEqual(sorted(after));
      await enforcer.withdraw();
      expect(await enforcer.list()).toEqual([]);
    });

    test('other spellings collapse to the canonical entry; text not of the kind is never enforced', undefined, async ({ enforcer }) => {
      const { same, invalid } = spellings(kind);
      const want = sorted(conformanceValues(kind, 2));
      const result = await enforcer.sync([...same.map((value) => ({ value, score: 50 })), ...invalid.map((value) => ({ value, score: 900 }))]);
      expect(result).toMatchObject({ enforced: 2, cut: 0 });
      if (result.invalid !== undefined) expect(result.invalid).toBe(invalid.length);
      expect(await enforcer.list()).toEqual(want);
      // Removing by another spelling removes the entry.
      await enforcer.apply({ add: [], remove: [same[0]!] });
      expect(await enforcer.list()).toEqual(sorted(conformanceValues(kind, 2).slice(1)));
    });

    test('at capacity the lowest scores are cut', 3, async ({ enforcer }) => {
      expect(enforcer.capacity).toBe(3);
      const entries = conformanceValues(kind, 5).map((e, i) => ({ ...e, score: [10, 50, 30, 40, 20][i]! }));
      expect(await enforcer.sync(entries)).toMatchObject({ enforced: 3, cut: 2 });
      expect(await enforcer.list()).toEqual(sorted([entries[1]!, entries[2]!, entries[3]!]));
    });

    test('a target emptied behind its back is found by reconcile (or list) and re-asserted', undefined, async (subject) => {
      const { enforcer } = subject;
      if (!subject.disturb) return;
      const entries = conformanceValues(kind, 5);
      await enforcer.sync(entries);
      await subject.disturb();
      if (enforcer.reconcile) {
        expect((await enforcer.reconcile()).drifted).toBe(true);
      } else {
        expect(await enforcer.list()).not.toEqual(sorted(entries));
        await enforcer.sync(entries);
      }
      expect(await enforcer.list()).toEqual(sorted(entries));
    });
  });
}
