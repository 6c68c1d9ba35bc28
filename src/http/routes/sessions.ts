import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { errorResponses } from '../../contract/errors.js';
import { SESSION_COOKIE, Session, SessionCreate } from '../../contract/sessions.js';
import type { Services } from '../../services/index.js';
import { principalOf } from '../auth.js';
import { NoContent, noContent } from '../replies.js';

const tags = ['sessions'];
const config = { access: 'organization' as const };

/**
 * The cookie names the session for every path of Berth; scripts cannot read it (HttpOnly),
 * other sites' requests do not carry it (SameSite=Strict), and over https it never travels
 * in the clear (Secure; `request.protocol` honours X-Forwarded-Proto from trusted proxies).
 */
function cookieOptions(request: FastifyRequest, expires?: Date) {
  return { path: '/', httpOnly: true, sameSite: 'strict', secure: request.protocol === 'https', ...(expires ? { expires } : {}) } as const;
}

const clearCookie = (request: FastifyRequest, reply: FastifyReply) => reply.clearCookie(SESSION_COOKIE, cookieOptions(request));

/** Sign-in for the dashboard, and for scripts that want what it does: an API key exchanged for a session cookie. */
export const sessionRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  const { sessions } = services;

  app.post(
    '/v1/sessions',
    {
      config,
      schema: {
        operationId: 'createSession',
        summary: 'Sign in: exchange the API key for a session cookie',
        description:
          'Answers the session and sets the `berth_session` cookie (HttpOnly, SameSite=Strict, Secure over https) that authenticates ' +
          'later requests sent without a key; writes made with it need `X-CSRF-Token` set to `csrf_token`. The session lasts ' +
          'BERTH_SESSION_HOURS, until sign-out, or until its key is revoked. The key itself is not kept by the browser.',
        tags,
        body: SessionCreate,
        response: { 201: Session, ...errorResponses() },
      },
    },
    async (request, reply) => {
      const { secret, session } = await sessions.open(principalOf(request));
      reply.setCookie(SESSION_COOKIE, secret, cookieOptions(request, new Date(session.expires_at)));
      return reply.code(201).send(session);
    },
  );

  app.get(
    '/v1/sessions/current',
    {
      config,
      schema: {
        operationId: 'getCurrentSession',
        summary: 'The session of the request: who is signed in, what they may do, and the CSRF token',
        tags,
        response: { 200: Session, ...errorResponses('session_not_found') },
      },
    },
    async (request) => sessions.current(principalOf(request), request.session),
  );

  app.delete(
    '/v1/sessions/current',
    {
      config,
      schema: {
        operationId: 'deleteCurrentSession',
        summary: 'Sign out: end the session of the request',
        tags,
        response: { 204: NoContent, ...errorResponses('session_not_found') },
      },
    },
    async (request, reply) => {
      await sessions.close(principalOf(request), request.session);
      clearCookie(request, reply);
      return noContent(reply);
    },
  );
};
