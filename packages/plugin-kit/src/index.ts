export * from './logger.ts';
export * from './source.ts';
export * from './enforcer.ts';
