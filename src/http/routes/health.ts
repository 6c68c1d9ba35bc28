import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';

export async function healthRoutes(app: FastifyInstance) {
  app.get(
    '/ok',
    {
      schema: {
        operationId: 'checkHealth',
        summary: 'Liveness check',
        tags: ['health'],
        security: [],
        response: { 200: Type.Object({ ok: Type.Boolean() }) },
      },
    },
    async () => ({ ok: true }),
  );
}
