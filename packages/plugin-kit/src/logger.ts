/**
 * The logging surface plugins get: pino's method shape (`log.warn({ err, ip }, 'msg')`), so the
 * agent passes a pino child logger and tests may pass pino itself. Plugins never log secrets.
 */
export interface LogFn {
  (obj: object, msg?: string): void;
  (msg: string): void;
}
export interface PluginLogger {
  debug: LogFn;
  info: LogFn;
  warn: LogFn;
  error: LogFn;
  child(bindings: Record<string, unknown>): PluginLogger;
}
