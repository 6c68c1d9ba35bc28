import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Services } from '../../services/index.js';

export const revisionRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (_app, _options) => {};
