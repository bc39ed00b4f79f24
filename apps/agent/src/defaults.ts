/** The agent's version and default paths: constants every command may need, free of any plugin code. */
export const AGENT_VERSION = 'v0.1.0';

export const DEFAULT_CONFIG_PATH = '/etc/rampart-agent/agent.json';
