import { z } from 'zod';
import { sleep, type PluginLogger } from '@rampart/plugin-kit';
import type { ApiBody, WebApiTransport } from './web-api.ts';

/** A task (publish, install-policy) that ended in anything but success. */
export class CheckPointTaskError extends Error {
  readonly code = 'CHECKPOINT_TASK_FAILED';
  constructor(
    readonly task: string,
    readonly status: string,
    readonly detail: string,
  ) {
    super(`${task} ended ${status}: ${detail.slice(0, 500)}`);
    this.name = 'CheckPointTaskError';
  }
}

export interface Credentials {
  user: string;
  password: string;
  /** The domain on a Multi-Domain Server; empty for a single management server. */
  domain: string;
}

export interface SessionSettings {
  transport: WebApiTransport;
  credentials: Credentials;
  /** Wait between two `show-task` polls. */
  pollMs: number;
  /** A `keepalive` every this many polls, so a long install does not expire the session. */
  keepaliveEvery: number;
  log: PluginLogger;
}

const LoginReply = z.object({ sid: z.string().min(1) });
const TaskReply = z.object({ 'task-id': z.string().min(1) });
const ShowTaskReply = z.object({
  tasks: z
    .array(
      z.object({
        status: z.string(),
        'progress-percentage': z.number().optional(),
        comments: z.string().optional(),
        'task-details': z.array(z.unknown()).optional(),
      }),
    )
    .min(1),
});

/** Cleanup (discard, logout) gets its own short limit, never the caller's aborted signal. */
const CLEANUP_MS = 15_000;

/**
 * One login session. Changes made in it stay private (and lock the objects they touch) until
 * `publish`; `discard` drops them. The session is always ended by `logout`, and a session
 * that made changes is discarded first when anything fails, so no half-done session keeps
 * objects locked for other administrators.
 */
export class MgmtSession {
  #sid: string | undefined;
  readonly #s: SessionSettings;

  private constructor(s: SessionSettings, sid: string) {
    this.#s = s;
    this.#sid = sid;
  }

  static async login(s: SessionSettings, readOnly: boolean, signal?: AbortSignal): Promise<MgmtSession> {
    const { user, password, domain } = s.credentials;
    const body: ApiBody = { user, password, 'session-name': 'rampart-agent', ...(domain ? { domain } : {}), ...(readOnly ? { 'read-only': true } : {}) };
    const reply = LoginReply.parse(await s.transport.post('login', body, undefined, signal));
    return new MgmtSession(s, reply.sid);
  }

  call(command: string, body: ApiBody, signal?: AbortSignal): Promise<ApiBody> {
    if (!this.#sid) throw new Error(`session already ended before ${command}`);
    return this.#s.transport.post(command, body, this.#sid, signal);
  }

  /** Starts a task command (`publish`, `install-policy`) and waits until it ends. */
  async runTask(command: string, body: ApiBody, signal?: AbortSignal): Promise<void> {
    const { 'task-id': taskId } = TaskReply.parse(await this.call(command, body, signal));
    for (let polls = 1; ; polls += 1) {
      const reply = ShowTaskReply.parse(await this.call('show-task', { 'task-id': taskId, 'details-level': 'full' }, signal));
      const task = reply.tasks[0]!;
      if (task.status === 'succeeded') return;
      if (task.status !== 'in progress' && task.status !== 'pending') throw new CheckPointTaskError(command, task.status, taskMessage(task));
      if (polls % this.#s.keepaliveEvery === 0) await this.call('keepalive', {}, signal);
      await sleep(this.#s.pollMs, signal);
    }
  }

  /** Drops unpublished changes and ends the session; best effort, failures only logged. */
  async abandon(): Promise<void> {
    try {
      await this.#cleanup('discard');
    } finally {
      await this.end();
    }
  }

  /** Ends the session (idempotent); a failure is logged, the server expires the session anyway. */
  async end(): Promise<void> {
    if (!this.#sid) return;
    try {
      await this.#cleanup('logout');
    } finally {
      this.#sid = undefined;
    }
  }

  async #cleanup(command: string): Promise<void> {
    try {
      await this.call(command, {}, AbortSignal.timeout(CLEANUP_MS));
    } catch (err) {
      this.#s.log.warn({ err, command }, 'session cleanup failed');
    }
  }
}

/** The task's comments and the messages found in its details, as one line. */
function taskMessage(task: { comments?: string | undefined; 'task-details'?: unknown[] | undefined }): string {
  const found: string[] = task.comments ? [task.comments] : [];
  const visit = (node: unknown, depth: number) => {
    if (depth > 6 || found.length >= 10 || !node || typeof node !== 'object') return;
    for (const [key, value] of Object.entries(node)) {
      if ((key === 'message' || key === 'statusDescription') && typeof value === 'string' && value) found.push(value);
      else visit(value, depth + 1);
    }
  };
  visit(task['task-details'], 0);
  return [...new Set(found)].join('; ') || 'no message';
}
