import { z } from 'zod';

/** Response schema of routes that answer with no body (reports, decisions, feedback, deletions). */
export const EMPTY = z.null().describe('empty body');

/** `reply.send(NO_BODY)`: the status with no body at all (the null schema documents it; nothing is serialized). */
export const NO_BODY = undefined as unknown as null;
