import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import * as contracts from './index.ts';

const schemas = Object.entries(contracts as Record<string, unknown>).filter((entry): entry is [string, z.ZodType] => entry[1] instanceof z.ZodType);

/** Request schemas are converted as input only: their output side may hold transforms. */
const isRequest = (name: string) => /(Params|Query|Body)$/.test(name);
/** Documents that are both written (request) and read back (response). */
const BOTH = new Set(['AgentConfig', 'AgentSettingsDocument', 'OrganizationConfig']);

describe('OpenAPI generation', () => {
  it('finds the exported schemas', () => {
    expect(schemas.length).toBeGreaterThan(60);
  });

  it.each(schemas.filter(([name]) => isRequest(name) || BOTH.has(name)))('%s converts as a request (io: input)', (_name, schema) => {
    expect(() => z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' })).not.toThrow();
  });

  it.each(schemas.filter(([name]) => !isRequest(name)))('%s converts as a response (io: output)', (_name, schema) => {
    expect(() => z.toJSONSchema(schema, { io: 'output' })).not.toThrow();
  });

  it('publishes bounds and defaults of request bodies', () => {
    const json = z.toJSONSchema(contracts.DomainReportBody, { io: 'input', unrepresentable: 'any' }) as {
      properties: Record<string, Record<string, unknown>>;
      required: string[];
    };
    expect(json.required).toEqual(['domain']);
    expect(json.properties.confidence?.default).toBe(1);
    expect(json.properties.tags).toMatchObject({ minItems: 1, maxItems: 10, uniqueItems: true });
  });
});
