import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { CdnList, DomainResolution, InfoDomainParams, InfoIpParams, IpMetadata } from '@rampart/contracts';
import type { AppContext } from '../../context.ts';
import { createDnsLookup } from '../../services/enrichment/dns-lookup.ts';
import { ipMetadata, nonPublicReason } from '../../services/enrichment/ip-metadata.ts';

/** `/info/...`: offline address metadata, DNS resolution through the configured resolver, CDN ranges. */
export const infoRoutes: FastifyPluginAsyncZod<{ context: AppContext }> = async (app, { context }) => {
  const dns = createDnsLookup(context.config.tools.dns);
  const { enrichment } = context;

  app.get(
    '/info/cdn/list',
    {
      config: { rampart: {} },
      schema: {
        tags: ['tools'],
        summary: 'Well-known CDN and cloud edge address ranges (dated data file; Last-Modified is its date)',
        response: { 200: CdnList },
      },
    },
    async (_request, reply) => {
      const { date, records } = enrichment.cdnList();
      void reply.header('last-modified', new Date(`${date}T00:00:00Z`).toUTCString());
      return records;
    },
  );

  app.get(
    '/info/domain/:domain_name',
    {
      config: { rampart: { coin: 'tool' } },
      schema: {
        tags: ['tools'],
        summary: 'IPv4 addresses (A records) a domain resolves to; 404 NXDOMAIN, 504 resolver timeout',
        params: InfoDomainParams,
        response: { 200: DomainResolution },
      },
    },
    async (request) => dns.addressesOf(request.params.domain_name),
  );

  app.get(
    '/info/:ipv4',
    {
      config: { rampart: { coin: 'tool' } },
      schema: {
        tags: ['tools'],
        summary: 'Geolocation and network metadata of an IPv4 address, from offline databases',
        params: InfoIpParams,
        response: { 200: IpMetadata },
      },
    },
    async (request) => {
      const ip = request.params.ipv4;
      // No PTR query leaves the machine for an address that has no public name anyway.
      const reverse = nonPublicReason(ip) ? '' : await dns.reverseOf(ip);
      return ipMetadata(enrichment, ip, reverse, new Date());
    },
  );
};
