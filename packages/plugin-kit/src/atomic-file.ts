import { open, rename, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

/**
 * Writes `path` so that a reader (pfctl, nginx, HAProxy, a CSV consumer) sees either the old or
 * the new file, never a half-written one, and a power cut leaves one of the two: temp file in
 * the same directory, fsync, rename, then fsync of the directory so the rename itself is durable.
 * `mtime`, when given, is set on the file before the rename (a served file's Last-Modified).
 */
export async function writeFileAtomic(path: string, data: string, mode = 0o644, mtime?: Date): Promise<void> {
  const dir = dirname(path);
  // node:crypto is loaded by the first write, not with plugin-kit (`rampart-agent parse` writes none).
  const tmp = join(dir, `.${basename(path)}.${process.getBuiltinModule('node:crypto').randomBytes(6).toString('hex')}.tmp`);
  const handle = await open(tmp, 'w', mode);
  try {
    await handle.writeFile(data, 'utf8');
    if (mtime) await handle.utimes(mtime, mtime);
    await handle.sync();
  } catch (err) {
    await handle.close();
    await unlink(tmp).catch(() => undefined);
    throw err;
  }
  await handle.close();
  try {
    await rename(tmp, path);
  } catch (err) {
    await unlink(tmp).catch(() => undefined);
    throw err;
  }
  const dirHandle = await open(dir, 'r');
  try {
    await dirHandle.sync();
  } finally {
    await dirHandle.close();
  }
}
