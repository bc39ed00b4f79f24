import pino, { type Logger } from 'pino';
import { redactSecrets } from '@rampart/contracts';
import { secretKeysOfRegistry } from '../registry.ts';

/** Request credentials the agent's HTTP clients may log: not settings, so no schema declares them. */
const TRANSPORT_PATHS = ['headers.authorization', 'headers.Authorization', '*.headers.authorization', 'apiKey', 'token', '*.token'];

/**
 * The agent's logger. Every field declared secret in the schemas (`secretKeys`: the settings
 * document's and the plugins', see registry.ts) is redacted in what a line logs, at any depth;
 * only logged objects are walked, and a line without a secret is not copied.
 */
export function createLogger(level: string, destination?: pino.DestinationStream, secretKeys: readonly string[] = secretKeysOfRegistry()): Logger {
  const keys = new Set(secretKeys);
  return pino(
    {
      level,
      base: { app: 'rampart-agent' },
      redact: { paths: TRANSPORT_PATHS, censor: '[redacted]' },
      formatters: { log: (object) => redactSecrets(object, keys, '[redacted]') },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination,
  );
}
