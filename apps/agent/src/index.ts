export { Agent, AGENT_VERSION } from './agent.ts';
export type { AgentOptions } from './agent.ts';
export { buildCli, runCli } from './cli.ts';
export { parseAgentFile, ConfigInvalidError } from './config/load.ts';
export type { AgentFileConfig, ConfigProblem } from './config/load.ts';
export { readAgentConfig, validateAgentText } from './config/read.ts';
export { REGISTRY, SOURCES, ENFORCERS, findSource, findEnforcer, UnknownPluginError } from './registry.ts';
export { createLogger } from './runtime/logger.ts';
export { RECONNECT, QUICK_ATTEMPTS } from './sync/channel.ts';
