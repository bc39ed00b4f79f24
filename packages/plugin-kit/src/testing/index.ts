// Conformance suites (conventions §12) live here: enforcer-conformance.ts, source-conformance.ts.
export {};
