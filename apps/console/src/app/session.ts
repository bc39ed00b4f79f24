import { ROLE, type MeResponse } from '@rampart/contracts';
import type { Api } from './api.ts';

export interface Session {
  api: Api;
  me: MeResponse;
  refreshMe?: () => Promise<void>;
}

export const isAdmin = (s: Session) => s.me.user.role >= ROLE.admin;
export const canContribute = (s: Session) => s.me.user.role >= ROLE.contributor;
