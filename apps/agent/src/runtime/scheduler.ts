import { Cron } from 'croner';
import type { PluginLogger } from '@rampart/plugin-kit';

/**
 * Cron expression for "every `minutes` minutes" (the agent's `sync_time`). Cron cannot
 * express every 7 hours evenly; beyond an hour the value is rounded to whole hours.
 */
export function cronForMinutes(minutes: number): string {
  const m = Math.max(1, Math.round(minutes));
  if (m < 60) return `*/${m} * * * *`;
  const hours = Math.min(24, Math.max(1, Math.round(m / 60)));
  return hours >= 24 ? '0 0 * * *' : `0 */${hours} * * *`;
}

export interface Job {
  name: string;
  run(): Promise<void>;
}

/**
 * Whether `expression` is a schedule the agent takes: 5 fields, or 6 with seconds first (croner
 * also reads a 7th, the year, which the agent's configuration never accepted).
 */
function parseSchedule(expression: string, run: () => Promise<void>): Cron | undefined {
  const fields = expression.trim().split(/\s+/).length;
  if (fields !== 5 && fields !== 6) return undefined;
  try {
    // Day of month and day of week must both match (crontab(5) would take either); `protect`: a
    // run still going when the next is due makes that one skip.
    return new Cron(expression, { protect: true, domAndDow: true }, run);
  } catch {
    return undefined;
  }
}

/**
 * Named jobs on cron expressions; a job never overlaps itself; errors are logged, not thrown.
 * croner, not node-cron: node-cron reads the time through `Intl.DateTimeFormat` every second,
 * which maps ICU's locale and time zone data (~9 MB of the agent's resident memory).
 */
export class Scheduler {
  private readonly tasks = new Map<string, { expression: string; task: Cron }>();

  constructor(private readonly log: PluginLogger) {}

  /** (Re)schedules `job` on `expression`; unchanged expressions keep their task. */
  set(expression: string, job: Job): void {
    const current = this.tasks.get(job.name);
    if (current?.expression === expression) return;
    if (current) current.task.stop();
    const task = parseSchedule(expression, async () => {
      try {
        await job.run();
      } catch (err) {
        this.log.warn({ err, job: job.name }, 'scheduled job failed');
      }
    });
    if (!task) {
      this.tasks.delete(job.name);
      throw new Error(`invalid cron expression for ${job.name}: ${expression}`);
    }
    this.tasks.set(job.name, { expression, task });
  }

  stop(): void {
    for (const { task } of this.tasks.values()) task.stop();
    this.tasks.clear();
  }
}
