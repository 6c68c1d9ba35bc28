import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { AuditEntry, AuditQuery } from '../../contract/audit.js';
import { Envelope } from '../../contract/common.js';
import { errorResponses } from '../../contract/errors.js';
import type { Services } from '../../services/index.js';
import { scopeOf } from '../auth.js';

/** The audit log: read-only through the API (admin and read-only keys). */
export const auditRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  app.get(
    '/v1/audit-log',
    {
      schema: {
        operationId: 'listAuditLog',
        summary: 'List the audit log',
        description:
          "One entry per change in the workspace, newest first (with admin keys, also the organization's own: workspaces, keys, " +
          'OAuth providers), made with a key or by Berth itself (actor type `berth`, with its reason). Filters combine; `offset` in ' +
          'the answer is where the next page starts. Kept BERTH_AUDIT_RETENTION_DAYS days.',
        tags: ['admin'],
        querystring: AuditQuery,
        response: { 200: Envelope(AuditEntry), ...errorResponses() },
      },
    },
    async (request) => services.audit.list(scopeOf(request), request.query),
  );
};
