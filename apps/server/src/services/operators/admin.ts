import { ApiError, ID_PREFIX, ROLE } from '@rampart/contracts';
import type { Organization, Store, UserRow } from '../../store/index.ts';
import { generateApiKey } from './api-keys.ts';
import { randomIdPart } from '../ids.ts';

/** Operator actions shared by the CLI, the demo bootstrap and the admin API. */
export async function createOrganization(store: Store, input: { name: string; trust?: number; credits?: number; delay?: string; isPublic?: boolean }): Promise<Organization> {
  if (await store.orgs.byName(input.name)) throw new ApiError('conflict', `an organization named "${input.name}" exists`);
  return store.orgs.create({
    gid: `${ID_PREFIX.org}${randomIdPart()}`,
    name: input.name,
    trust: input.trust ?? 0.5,
    credits: input.credits ?? 0,
    ...(input.delay !== undefined ? { delay: input.delay } : {}),
    ...(input.isPublic !== undefined ? { isPublic: input.isPublic } : {}),
  });
}

export async function createUser(
  store: Store,
  input: { orgGid: string; username: string; role: number; name?: string; surname?: string },
): Promise<UserRow> {
  const org = await store.orgs.byGid(input.orgGid);
  if (!org) throw new ApiError('not_found', `no organization ${input.orgGid}`);
  if (!Object.values(ROLE).includes(input.role as never)) throw new ApiError('validation_failed', `role must be one of ${Object.values(ROLE).join(', ')}`);
  if (await store.users.byUsername(input.username)) throw new ApiError('conflict', `a user "${input.username}" exists`);
  return store.users.create({
    guid: `${ID_PREFIX.user}${randomIdPart()}`,
    orgId: org.id,
    username: input.username,
    role: input.role,
    ...(input.name !== undefined ? { name: input.name } : {}),
    ...(input.surname !== undefined ? { surname: input.surname } : {}),
  });
}

/** Issues a key for a user; the plaintext is returned once and never stored. */
export async function createApiKey(store: Store, input: { username: string; label?: string }): Promise<{ keyId: string; key: string }> {
  const user = await store.users.byUsername(input.username);
  if (!user) throw new ApiError('not_found', `no user ${input.username}`);
  const key = generateApiKey();
  await store.keys.create({ keyId: key.keyId, userId: user.id, secretHash: key.secretHash, ...(input.label !== undefined ? { label: input.label } : {}) });
  return { keyId: key.keyId, key: key.plaintext };
}

export const DEMO = { org: 'Demo Organization', admin: 'admin@demo.rampart.local', credits: 100_000 } as const;

/**
 * On first start with an empty store: a demo organization with coins and an admin key, so
 * `npm start` is immediately usable. Returns the key, or undefined when the store had data.
 */
export async function bootstrapDemo(store: Store): Promise<{ org: Organization; user: UserRow; key: string } | undefined> {
  if ((await store.orgs.count()) > 0) return undefined;
  const org = await createOrganization(store, { name: DEMO.org, trust: 0.85, credits: DEMO.credits });
  const user = await createUser(store, { orgGid: org.gid, username: DEMO.admin, role: ROLE.admin, name: 'Demo', surname: 'Admin' });
  const { key } = await createApiKey(store, { username: user.username, label: 'demo admin key' });
  return { org, user, key };
}
