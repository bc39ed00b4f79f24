// The enforcer engine: one implementation of the Enforcer contract over a target's primitives.
export { createEngineEnforcer, engineStats, type EngineOptions, type EngineStats } from './engine.ts';
export type { EnforcerAdapter, TargetChange } from './adapter.ts';
export { ipv4Codec, sortByCodec, sortValues, type KindCodec } from './codec.ts';
export { DesiredSet, selectWithinCapacity } from './desired-set.ts';
export { EnforcedSet, type EnforcedChange } from './enforced-set.ts';
