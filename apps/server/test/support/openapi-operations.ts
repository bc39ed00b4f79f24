/**
 * The operations of the generated OpenAPI document, reduced to what a request generator needs.
 * Tests enumerate routes from here (never from a hand-written list) so that a new route is
 * covered as soon as it is registered.
 */

/** The subset of JSON Schema that @fastify/swagger emits for our zod contracts. */
export interface JsonSchema {
  type?: string | string[];
  enum?: unknown[];
  const?: unknown;
  default?: unknown;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  prefixItems?: JsonSchema[];
  anyOf?: JsonSchema[];
  allOf?: JsonSchema[];
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  pattern?: string;
  format?: string;
}

export interface ApiParameter {
  in: 'path' | 'query';
  name: string;
  required: boolean;
  schema: JsonSchema;
}

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH';

export interface ApiOperation {
  /** `METHOD /api/v1/path/{param}` as in the document. */
  id: string;
  method: HttpMethod;
  path: string;
  params: ApiParameter[];
  /** JSON request body schema, when the operation takes one. */
  body?: JsonSchema;
}

interface OpenApiDocument {
  paths: Record<string, Record<string, { parameters?: ApiParameter[]; requestBody?: { content?: Record<string, { schema?: JsonSchema }> } }>>;
}

const METHODS = new Set(['get', 'post', 'put', 'delete', 'patch']);

export function apiOperations(document: unknown): ApiOperation[] {
  const doc = document as OpenApiDocument;
  const ops: ApiOperation[] = [];
  for (const [path, byMethod] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(byMethod)) {
      if (!METHODS.has(method)) continue;
      const params = (op.parameters ?? []).filter((p) => p.in === 'path' || p.in === 'query').map((p) => ({ ...p, required: Boolean(p.required) }));
      const body = op.requestBody?.content?.['application/json']?.schema;
      const upper = method.toUpperCase() as HttpMethod;
      ops.push({ id: `${upper} ${path}`, method: upper, path, params, ...(body ? { body } : {}) });
    }
  }
  return ops;
}

export const pathParams = (op: ApiOperation) => op.params.filter((p) => p.in === 'path');
export const queryParams = (op: ApiOperation) => op.params.filter((p) => p.in === 'query');

/** Fills `{name}` segments with values that are already URL-encoded (raw segments may be odd on purpose). */
export function fillPath(path: string, encoded: Record<string, string>): string {
  return path.replaceAll(/\{(\w+)\}/g, (_, name: string) => {
    const value = encoded[name];
    if (value === undefined) throw new Error(`no value for path parameter ${name} of ${path}`);
    return value;
  });
}

/** A query string from already-encoded pairs (a name may repeat). */
export function queryString(pairs: Array<[string, string]>): string {
  return pairs.length === 0 ? '' : `?${pairs.map(([k, v]) => `${k}=${v}`).join('&')}`;
}

export const schemaTypes = (s: JsonSchema): string[] => (Array.isArray(s.type) ? s.type : s.type ? [s.type] : []);
export const isNumeric = (s: JsonSchema) => schemaTypes(s).some((t) => t === 'number' || t === 'integer');
