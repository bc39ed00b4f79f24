import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { FileTypeList } from '@rampart/contracts';
import type { AppContext } from '../../context.ts';
import { FILE_TYPE_CATALOG } from '../../services/named/file-type-catalog.ts';

/** `GET /file_types`: the fixed catalog; the only `file_type` values file reports accept. */
export const fileTypesRoute: FastifyPluginAsyncZod<{ context: AppContext }> = async (app) => {
  app.get(
    '/file_types',
    {
      config: { rampart: {} },
      schema: { tags: ['tools'], summary: 'Accepted file MIME types (the only file_type values reports accept)', response: { 200: FileTypeList } },
    },
    async () => [...FILE_TYPE_CATALOG],
  );
};
