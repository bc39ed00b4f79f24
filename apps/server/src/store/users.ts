import type { Queryable } from './db.ts';

export interface UserRow {
  id: number;
  guid: string;
  org_id: number;
  name: string;
  surname: string;
  username: string;
  role: number;
  unsuccessful_login: number;
}

const COLUMNS = 'id, guid, org_id, name, surname, username, role, unsuccessful_login';

export class UserStore {
  constructor(private readonly db: Queryable) {}

  async create(input: { guid: string; orgId: number; name?: string; surname?: string; username: string; role: number }): Promise<UserRow> {
    const res = await this.db.query<UserRow>(
      `insert into users (guid, org_id, name, surname, username, role)
       values ($1, $2, $3, $4, $5, $6) returning ${COLUMNS}`,
      [input.guid, input.orgId, input.name ?? '', input.surname ?? '', input.username, input.role],
    );
    return res.rows[0]!;
  }

  async byGuid(guid: string): Promise<UserRow | undefined> {
    return (await this.db.query<UserRow>(`select ${COLUMNS} from users where guid = $1`, [guid])).rows[0];
  }

  async byUsername(username: string): Promise<UserRow | undefined> {
    return (await this.db.query<UserRow>(`select ${COLUMNS} from users where username = $1`, [username])).rows[0];
  }

  async countFailedLogin(userId: number): Promise<void> {
    await this.db.query('update users set unsuccessful_login = unsuccessful_login + 1 where id = $1', [userId]);
  }
}
