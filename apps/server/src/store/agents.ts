import type { Db } from './db.ts';

export type CheckinVia = 'ipv4' | 'feedback' | 'sync';

export class AgentStore {
  constructor(private readonly db: Db) {}

  /** Marks an agent of this organization alive now; unknown or foreign agents are ignored. */
  async checkIn(orgId: number, gaid: string, via: CheckinVia, plugin?: string): Promise<boolean> {
    const res = await this.db.query(
      `update agents set last_checkin_at = now(), last_checkin_via = $3, last_plugin = coalesce($4, last_plugin)
       where org_id = $1 and gaid = $2`,
      [orgId, gaid, via, plugin ?? null],
    );
    return res.rowCount > 0;
  }
}
