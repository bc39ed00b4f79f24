import cron, { type ScheduledTask } from 'node-cron';
import type { PluginLogger } from '@rampart/plugin-kit';

/**
 * node-cron expression for "every `minutes` minutes" (the agent's `sync_time`). Cron cannot
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

/** Named jobs on cron expressions; a job never overlaps itself; errors are logged, not thrown. */
export class Scheduler {
  private readonly tasks = new Map<string, { expression: string; task: ScheduledTask }>();

  constructor(private readonly log: PluginLogger) {}

  /** (Re)schedules `job` on `expression`; unchanged expressions keep their task. */
  set(expression: string, job: Job): void {
    const current = this.tasks.get(job.name);
    if (current?.expression === expression) return;
    if (current) void current.task.destroy();
    if (!cron.validate(expression)) throw new Error(`invalid cron expression for ${job.name}: ${expression}`);
    const task = cron.schedule(
      expression,
      async () => {
        try {
          await job.run();
        } catch (err) {
          this.log.warn({ err, job: job.name }, 'scheduled job failed');
        }
      },
      { noOverlap: true, name: job.name },
    );
    this.tasks.set(job.name, { expression, task });
  }

  stop(): void {
    for (const { task } of this.tasks.values()) void task.destroy();
    this.tasks.clear();
  }
}
