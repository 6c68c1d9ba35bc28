import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply } from 'fastify';

/**
 * Where `npm run build` puts the dashboard (vite's output): `dist/dashboard`, found from
 * this file both as compiled (dist/http/) and as source run by tsx (src/http/).
 */
export const DASHBOARD_DIR = fileURLToPath(new URL('../../dist/dashboard/', import.meta.url));

/**
 * The dashboard's client-side routes: each answers the app's HTML, so a link to any screen
 * can be pasted and opened. Listed rather than a catch-all, so an unknown API path stays a
 * JSON 404 (`route_not_found`).
 */
const PAGES = [
  '/',
  '/sign-in',
  '/deployments',
  '/deployments/*',
  '/listeners',
  '/integrations',
  '/api-keys',
  '/audit-log',
  '/webhooks',
  '/webhooks/*',
  '/events',
];

/**
 * The page may load only its own scripts and styles and talk only to Berth: no CDN, no
 * remote font, no inline script, and no other site may frame it.
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'self'",
].join('; ');

/**
 * Serves the dashboard at `/` (docs/architecture.md, "The dashboard"): its hashed assets
 * under `/assets/` (cached for good, brotli or gzip when the browser takes them), and its HTML for every page. When the dashboard was
 * not built, its pages answer 404 saying how to build it; the API is unaffected either way.
 */
export async function installDashboard(app: FastifyInstance, directory = DASHBOARD_DIR): Promise<void> {
  const built = fs.existsSync(`${directory}/index.html`);
  if (built) {
    await app.register(fastifyStatic, {
      root: `${directory}/assets`,
      prefix: '/assets/',
      immutable: true,
      maxAge: '365d',
      index: false,
      schemaHide: true,
      // The build wrote each asset's .br and .gz (src/dashboard/vite.config.ts): sent by Accept-Encoding.
      preCompressed: true,
    });
  }
  const page = (_request: unknown, reply: FastifyReply) => {
    if (!built) {
      return reply.code(404).send({ detail: 'The dashboard is not built: run `npm run build`, then start Berth again.', code: 'route_not_found' });
    }
    reply.header('content-security-policy', CONTENT_SECURITY_POLICY).header('cache-control', 'no-cache').header('x-content-type-options', 'nosniff');
    return reply.sendFile('index.html', directory, { cacheControl: false });
  };
  for (const url of PAGES) app.get(url, { schema: { hide: true } }, page);
}
