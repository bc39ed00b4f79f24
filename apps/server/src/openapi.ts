import type { FastifyDynamicSwaggerOptions } from '@fastify/swagger';
import { jsonSchemaTransform } from 'fastify-type-provider-zod';
import { ROLE } from '@rampart/contracts';
import type { AppConfig } from './config.ts';
import { AGENT_KEY_ROUTES } from './plugins/agent-routes.ts';

const ROLE_TEXT = [
  `Roles (\`role\` in the user object): ${ROLE.reader} reader (feeds, look-ups, tools);`,
  `${ROLE.contributor} contributor (+ reports and decisions); ${ROLE.admin} organization admin`,
  `(+ organization and agent settings, agents, secure VPN, API keys); ${ROLE.operator} alliance operator`,
  '(creates organizations, sets trust, grants coins).',
].join(' ');

const AGENT_KEY_TEXT = `Agent keys (JWT, issued per agent) may call only ${AGENT_KEY_ROUTES.map((r) => `\`${r.method} ${r.url}\``).join(', ')}; anything else is 403.`;

/** The OpenAPI 3.1 document is generated from the route schemas, which are the contracts. */
export function openapiDocument(config: AppConfig): FastifyDynamicSwaggerOptions {
  return {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Rampart threat-intelligence API',
        version: '4.0.0',
        description: [
          'Shared threat-intelligence feeds, look-ups and reports for an alliance of organizations.',
          'Every error is `application/problem+json` (RFC 9457).',
          'Priced requests answer with `X-Coins-Cost` and `X-Coins-Remaining`; 402 when the balance is too small.',
          ROLE_TEXT,
          AGENT_KEY_TEXT,
          'Failed authentications, requests per key and list responses in flight per key are limited: 429 with `Retry-After`.',
        ].join('\n\n'),
      },
      // Paths carry the full `/api/v1/...` prefix, so the server is the origin alone.
      servers: [{ url: config.publicUrl ? new URL(config.publicUrl).origin : '/' }],
      components: {
        securitySchemes: {
          apiKey: { type: 'apiKey', in: 'header', name: 'Authorization', description: 'The API key, alone or after `Bearer `.' },
          crowdsecApiKey: {
            type: 'apiKey',
            in: 'header',
            name: 'X-Api-Key',
            description: "CrowdSec bouncers (`/api/v1/crowdsec/…`): an agent key; wrong or revoked keys are 403, as CrowdSec's Local API answers.",
          },
        },
      },
      security: [{ apiKey: [] }],
    },
    transform: jsonSchemaTransform,
  };
}
