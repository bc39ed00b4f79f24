import type { PluginLogger } from '@rampart/plugin-kit';

/*
 * After a feed changes, each device is asked over SSH to fetch it now instead of at its next
 * scheduled refresh (`updates` minutes). The command is the operator's, with `{feed}` replaced
 * by each changed feed's name (one command per feed), or run once when it has no `{feed}`.
 * A refresh that fails is logged and kept in the status until the next attempt on that device
 * succeeds; it never fails the write: the device still pulls the new list on its schedule.
 */

export interface DeviceShell {
  exec(command: string, signal?: AbortSignal): Promise<string>;
  close(): Promise<void>;
}

export interface Device {
  /** `host` or `host:port`, as `connections` names it. */
  name: string;
  shell: DeviceShell;
}

export interface RefreshError {
  device: string;
  at: string;
  error: string;
}

export interface RefreshStatus {
  command: string;
  devices: string[];
  /** When the last refresh round started and ended well on every device (ISO times). */
  last_at?: string;
  last_ok_at?: string;
  /** Rounds of each outcome, and the devices whose last attempt failed. */
  rounds: number;
  failed_rounds: number;
  errors: RefreshError[];
}

/**
 * Lines a device CLI prints when it refuses a command, while the SSH exit status says nothing
 * (PAN-OS `Invalid syntax.`, `Unknown command:`, `Server error :`; FortiOS `Command fail.`,
 * `command parse error`; IOS-style `% ...`). A heuristic: an unknown phrasing passes as success.
 */
const REFUSED = /^\s*(error\b|invalid syntax|unknown command|server error|command fail|command parse error|% )/im;

export function refusal(output: string): string | undefined {
  const m = REFUSED.exec(output);
  if (!m) return undefined;
  const start = output.lastIndexOf('\n', m.index) + 1;
  const end = output.indexOf('\n', m.index + 1);
  return output.slice(start, end < 0 ? undefined : end).trim();
}

export const commandsFor = (command: string, feeds: readonly string[]): string[] =>
  command.includes('{feed}') ? feeds.map((feed) => command.replaceAll('{feed}', feed)) : [command];

export class DeviceRefresher {
  readonly #status: RefreshStatus;
  readonly #failing = new Map<string, RefreshError>();

  constructor(
    private readonly devices: readonly Device[],
    private readonly command: string,
    private readonly log: PluginLogger,
    private readonly now: () => number = Date.now,
  ) {
    this.#status = { command, devices: devices.map((d) => d.name), rounds: 0, failed_rounds: 0, errors: [] };
  }

  status(): RefreshStatus {
    // In the order of `connections`, whichever failed first.
    const errors = this.devices.flatMap((d) => this.#failing.get(d.name) ?? []);
    return { ...this.#status, errors };
  }

  /** Asks every device (in parallel; each runs its commands in order) to fetch `feeds`. Never throws but on abort. */
  async refresh(feeds: readonly string[], signal?: AbortSignal): Promise<void> {
    if (this.devices.length === 0 || feeds.length === 0) return;
    const at = new Date(this.now()).toISOString();
    this.#status.last_at = at;
    this.#status.rounds += 1;
    const commands = commandsFor(this.command, feeds);
    const outcomes = await Promise.all(this.devices.map((d) => this.#one(d, commands, at, signal)));
    if (signal?.aborted) throw signal.reason;
    if (outcomes.every(Boolean)) this.#status.last_ok_at = at;
    else this.#status.failed_rounds += 1;
  }

  async #one(device: Device, commands: string[], at: string, signal?: AbortSignal): Promise<boolean> {
    try {
      for (const command of commands) {
        const out = await device.shell.exec(command, signal);
        const refused = refusal(out);
        if (refused) throw new Error(`'${command}' refused: ${refused.slice(0, 300)}`);
      }
      this.#failing.delete(device.name);
      return true;
    } catch (err) {
      if (signal?.aborted) return false;
      const error = (err instanceof Error ? err.message : String(err)).slice(0, 500);
      this.#failing.set(device.name, { device: device.name, at, error });
      this.log.warn({ err, device: device.name, stage: 'refresh' }, 'device refresh failed; it fetches the feed at its next scheduled update');
      return false;
    }
  }

  async close(): Promise<void> {
    await Promise.all(this.devices.map((d) => d.shell.close().catch(() => undefined)));
  }
}
