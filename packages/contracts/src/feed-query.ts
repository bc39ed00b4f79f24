import { z } from 'zod';
import { Tag } from './primitives.ts';

/** `ts` of the files, domains and URL feeds: an integer greater than -1. */
export const FeedTs = z.coerce.number().int().gt(-1).describe('Return updates starting from this timestamp (epoch seconds)');

export const FeedPageSize = z.coerce
  .number()
  .int()
  .gt(100)
  .lt(2000)
  .default(101)
  .describe('Records per page; bounds 100 and 2000 exclusive');

export const ScoreListParams = z.object({
  min_score: z.coerce.number().gt(1).lt(1000).describe('Minimum score; bounds 1 and 1000 exclusive'),
});

const MAX_FILTER_TAGS = 100;

function splitTags(raw: string): string[] {
  return raw
    .split(',')
    .map((tag) => tag.trim())
    .filter((tag) => tag.length > 0);
}

/** Comma-separated query value; an empty value means no tag filter. */
export const TagFilter = z
  .string()
  .max(MAX_FILTER_TAGS * 129)
  .transform(splitTags)
  .pipe(
    z
      .array(Tag)
      .max(MAX_FILTER_TAGS)
      .refine((tags) => new Set(tags).size === tags.length, { message: 'tags must be unique' }),
  )
  .describe('Comma-separated tags, unique, at most 100; matches records carrying at least one');
