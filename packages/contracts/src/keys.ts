import { z } from 'zod';
import { User } from './user.ts';

/*
 * Beyond the specification: an organization admin manages the organization's API keys, and any
 * caller can ask who it is (`GET /me`). The web console is built on these.
 */

export const KeyId = z.string().regex(/^[0-9a-f]{12}$/, { message: 'a key id is 12 lower-case hex characters' });

export const KeyIdParams = z.strictObject({ key_id: KeyId });

export const ApiKeyInfo = z
  .object({
    key_id: KeyId,
    username: z.string(),
    label: z.string(),
    created_at: z.string().describe('ISO 8601'),
    last_used_at: z.string().nullable().describe('ISO 8601; null when never used'),
    revoked_at: z.string().nullable(),
  })
  .meta({ description: 'An API key as listed: never the secret' });
export type ApiKeyInfo = z.infer<typeof ApiKeyInfo>;

export const ApiKeyCreateBody = z
  .strictObject({
    username: z.email().max(254).optional().describe('User the key acts as (same organization); default: the caller'),
    label: z.string().max(200).default('').describe('What the key is for'),
  })
  .meta({ description: 'Issue an API key' });

export const ApiKeyCreated = z
  .object({ key_id: KeyId, key: z.string().describe('The key; shown only in this answer'), username: z.string(), label: z.string() })
  .meta({ description: 'A new API key (its secret is not stored and cannot be shown again)' });

export const MeResponse = z
  .object({
    user: User,
    organization: z.object({
      gid: z.string(),
      name: z.string(),
      trust: z.number(),
      credit_tokens: z.number(),
      debit_tokens: z.number(),
      balance: z.number().describe('credit_tokens - debit_tokens'),
    }),
    via: z.enum(['user', 'agent']).describe('Whether the credential is a user API key or an agent key'),
  })
  .meta({ description: 'The caller, its organization and coin balance' });
export type MeResponse = z.infer<typeof MeResponse>;
