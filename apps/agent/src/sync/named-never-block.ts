import { canonicalDigest, canonicalDomain, canonicalUrl, isIpv4 } from '@rampart/contracts';
import type { IndicatorKind } from '@rampart/plugin-kit';
import type { NeverBlock } from './never-block.ts';

/** Why a domain, URL or digest may never be blocked. */
export type NamedProtectionReason = 'control_plane' | 'allow_list' | 'own_address' | 'special_range' | 'reserved_ip';

export interface NamedProtectedInput {
  /** Host names of the control plane (the agent's `api_url` host): blocking them would cut the agent off. */
  controlPlane: string[];
  /** The operator's `local.allow_domains`. */
  domains: string[];
  /** The operator's `local.allow_urls`: URL prefixes (canonical form). */
  urls: string[];
  /** The operator's `local.allow_digests` (MD5, SHA1 or SHA256). */
  digests: string[];
  /** The IPv4 never-block list: a URL whose host is a protected address is protected. */
  ipv4: NeverBlock;
}

/**
 * The never-block list of domains, URLs and file digests, one rule per kind:
 * - domain: protected when it is a protected name, a sub-domain of one, or a parent of one
 *   (resolvers that block a name block its sub-domains, so blocking `example.com` would take
 *   `api.example.com` down with it);
 * - URL: protected when its host is a protected domain under the same rule, its host is an IPv4
 *   address of the IPv4 never-block list, or it starts with an allowed URL prefix;
 * - file: protected when any digest of its record is allowed.
 */
export class NamedNeverBlock {
  private readonly names = new Map<string, NamedProtectionReason>();
  private readonly urlPrefixes: string[];
  private readonly digests: Set<string>;

  constructor(private readonly input: NamedProtectedInput) {
    for (const name of input.controlPlane) {
      const d = canonicalDomain(name);
      if (d) this.names.set(d, 'control_plane');
    }
    for (const name of input.domains) {
      const d = canonicalDomain(name);
      if (d && !this.names.has(d)) this.names.set(d, 'allow_list');
    }
    this.urlPrefixes = input.urls.map((u) => canonicalUrl(u)).filter((u): u is string => u !== undefined);
    this.digests = new Set(input.digests.map((d) => canonicalDigest(d)).filter((d): d is string => d !== undefined));
  }

  /** An empty list (no names, no digests), for states built before the settings are known. */
  static empty(ipv4: NeverBlock): NamedNeverBlock {
    return new NamedNeverBlock({ controlPlane: [], domains: [], urls: [], digests: [], ipv4 });
  }

  /** Why the domain (canonical) may not be blocked, or undefined. */
  protectsDomain(domain: string): NamedProtectionReason | undefined {
    const exact = this.names.get(domain);
    if (exact) return exact;
    // A sub-domain of a protected name: check each parent suffix.
    for (let dot = domain.indexOf('.'); dot >= 0; dot = domain.indexOf('.', dot + 1)) {
      const parent = this.names.get(domain.slice(dot + 1));
      if (parent) return parent;
    }
    // A parent of a protected name.
    for (const [name, reason] of this.names) if (name.endsWith(`.${domain}`)) return reason;
    return undefined;
  }

  /** Why the URL (canonical) may not be blocked, or undefined. */
  protectsUrl(url: string): NamedProtectionReason | undefined {
    for (const prefix of this.urlPrefixes) if (url.startsWith(prefix)) return 'allow_list';
    let host: string;
    try {
      host = new URL(url).hostname;
    } catch {
      return 'special_range';
    }
    if (isIpv4(host)) return this.input.ipv4.protects(host);
    if (host.startsWith('[')) return this.input.ipv4.protects(host.slice(1, -1));
    return this.protectsDomain(host);
  }

  /** Why one indicator (all values of one entry) may not be blocked, or undefined. */
  protectsValues(kind: Exclude<IndicatorKind, 'ipv4'>, values: readonly string[]): NamedProtectionReason | undefined {
    for (const v of values) {
      const reason = kind === 'domain' ? this.protectsDomain(v) : kind === 'url' ? this.protectsUrl(v) : this.digests.has(v) ? 'allow_list' : undefined;
      if (reason) return reason;
    }
    return undefined;
  }
}

/** The never-block list of one kind, as its block state asks it. */
export interface KindNeverBlock {
  protects(values: readonly string[]): NamedProtectionReason | undefined;
}

export function forKind(list: NamedNeverBlock, kind: Exclude<IndicatorKind, 'ipv4'>): KindNeverBlock {
  return { protects: (values) => list.protectsValues(kind, values) };
}

/** The list from the control plane's host names and the local options `allow_domains`, `allow_urls`, `allow_digests`. */
export function namedNeverBlockOf(controlPlane: string[], local: { allow_domains: string[]; allow_urls: string[]; allow_digests: string[] }, ipv4: NeverBlock): NamedNeverBlock {
  return new NamedNeverBlock({ controlPlane, domains: local.allow_domains, urls: local.allow_urls, digests: local.allow_digests, ipv4 });
}
