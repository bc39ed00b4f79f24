import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { writeDurable } from './durable-file.ts';

/** What `register` leaves for `run`: the agent key issued for this agent (file mode 0600). */
export const Credentials = z.object({ gaid: z.string(), token: z.string().min(1), header: z.string().min(1), token_id: z.string().optional() });
export type Credentials = z.infer<typeof Credentials>;

export function credentialsPath(stateDir: string): string {
  return join(stateDir, 'credentials.json');
}

export async function loadCredentials(stateDir: string): Promise<Credentials | undefined> {
  try {
    const parsed = Credentials.safeParse(JSON.parse(await readFile(credentialsPath(stateDir), 'utf8')));
    return parsed.success ? parsed.data : undefined;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

export async function saveCredentials(stateDir: string, credentials: Credentials): Promise<void> {
  await mkdir(stateDir, { recursive: true, mode: 0o700 });
  await writeDurable(credentialsPath(stateDir), JSON.stringify(credentials), 0o600);
}

/** The key `run` authenticates with: the file's api_jwt_key when set, else the one `register` saved. */
export function pickKey(fileKey: string | null | undefined, saved: Credentials | undefined, gaid: string): string | undefined {
  if (fileKey) return fileKey;
  if (saved && saved.gaid === gaid) return saved.token;
  return undefined;
}
