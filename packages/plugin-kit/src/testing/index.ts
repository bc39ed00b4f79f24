// Conformance suites (conventions §12) and the gate for tests against real system tools.
export * from './enforcer-conformance.ts';
export * from './system-gate.ts';
export * from './shared-folder.ts';
export * from './fail2ban-oracle.ts';
export * from './nginx-instance.ts';
export * from './netns-lab.ts';
export * from './firewall-topology.ts';
export * from './haproxy-instance.ts';
export * from './source-conformance.ts';
export * from './kind-conformance.ts';
export * from './named-instance.ts';
export * from './squid-instance.ts';
export * from './ssh-stand-in.ts';
export * from './journal-remote.ts';
export * from './loggers.ts';
export * from './until.ts';
