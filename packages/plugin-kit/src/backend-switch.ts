import { z } from 'zod';
import { composedOf, type IpsLabel } from '@rampart/contracts';
import { enforcerKinds, type EnforcerDefinition } from './enforcer.ts';

/** A config routed to one backend: which one, and that backend's parsed config. */
export interface BackendConfig {
  backend: string;
  config: unknown;
}

/**
 * One `ips` label served by several plugins chosen by an option, `options.<optionKey>`
 * (`packet_filter`: `backend`, nftables or iptables + ipset; `router_a`: `dialect`, RouterOS or
 * IOS). Each plugin declares the option with its own value. The registry lists the switch under
 * the label; validation reports the chosen plugin's issues at their own paths, and an unknown
 * value names the known ones. The kinds are the chosen plugin's (`dns_e`: domains, whichever
 * dialect), so the agent syncs the feeds the chosen plugin enforces.
 */
export function enforcerByBackend(
  serves: IpsLabel,
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- each definition validates its own config type
  backends: Readonly<Record<string, EnforcerDefinition<any>>>,
  defaultBackend: string,
  optionKey = 'backend',
): EnforcerDefinition<BackendConfig> {
  const chooser = z.unknown().transform((value, ctx): BackendConfig => {
    const options = (value as { options?: Record<string, unknown> } | null)?.options;
    const backend = options?.[optionKey] ?? defaultBackend;
    const definition = typeof backend === 'string' && Object.hasOwn(backends, backend) ? backends[backend] : undefined;
    if (!definition) {
      ctx.issues.push({
        code: 'custom',
        input: backend,
        path: ['options', optionKey],
        message: `unknown ${optionKey}; known: ${Object.keys(backends).sort().join(', ')}`,
      });
      return z.NEVER;
    }
    const parsed = definition.configSchema.safeParse(value);
    if (!parsed.success) {
      for (const issue of parsed.error.issues) ctx.issues.push({ code: 'custom', input: value, path: issue.path, message: issue.message });
      return z.NEVER;
    }
    return { backend: backend as string, config: parsed.data };
  });
  // The backends' secrets are the switch's own (print-config and logs derive them from the schemas).
  const configSchema = composedOf(chooser, Object.values(backends).map((b) => b.configSchema));
  return {
    name: Object.keys(backends).join('|'),
    serves,
    configSchema,
    kinds: [...new Set(Object.values(backends).flatMap((b) => b.kinds ?? ['ipv4' as const]))],
    kindsOf: (chosen) => enforcerKinds(backends[chosen.backend]!, chosen.config),
    create: (chosen, ctx) => backends[chosen.backend]!.create(chosen.config, ctx),
  };
}
