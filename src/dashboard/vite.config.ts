import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));

/**
 * The dashboard's build: `npm run build` runs it after the server's `tsc`, writing
 * dist/dashboard (index.html and hashed assets/ that http/dashboard.ts serves). Everything
 * is bundled: the page loads nothing from another origin.
 */
export default defineConfig({
  root: here('.'),
  base: '/',
  publicDir: false,
  logLevel: 'warn',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: here('../../dist/dashboard'),
    emptyOutDir: true,
    target: 'es2022',
    // No inline scripts or styles: the page's Content-Security-Policy allows only files of its own.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
  },
});
