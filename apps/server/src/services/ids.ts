import { randomUUID } from 'node:crypto';

/** Random part of a platform identifier: a UUID without dashes, upper-case. */
export function randomIdPart(): string {
  return randomUUID().replaceAll('-', '').toUpperCase();
}
