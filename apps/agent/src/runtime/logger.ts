import pino, { type Logger } from 'pino';
import { AGENT_CONFIG_SECRET_KEYS } from '@rampart/contracts';
import { LOCAL_SECRET_KEYS } from '../config/schema.ts';

/** Paths redacted in every log line: the secrets of the settings document wherever they are nested, and auth headers. */
export const REDACT_PATHS = [
  ...[...AGENT_CONFIG_SECRET_KEYS, ...LOCAL_SECRET_KEYS].flatMap((key) => [key, `*.${key}`, `*.*.${key}`, `*.*.*.${key}`]),
  'headers.authorization',
  'headers.Authorization',
  '*.headers.authorization',
  'apiKey',
  'token',
  '*.token',
];

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    { level, base: { app: 'rampart-agent' }, redact: { paths: REDACT_PATHS, censor: '[redacted]' }, timestamp: pino.stdTimeFunctions.isoTime },
    destination,
  );
}
