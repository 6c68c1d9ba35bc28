import { readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { brotliCompress, constants, gzip } from 'node:zlib';
import { defineConfig, type Plugin } from 'vite';

const here = (relative: string) => fileURLToPath(new URL(relative, import.meta.url));

/**
 * Writes each asset's `.br` and `.gz` beside it at the highest levels, once at build time:
 * Berth serves them to browsers that accept them (http/dashboard.ts, `preCompressed`), so the
 * page loads a third of the bytes without a compressing proxy and without compressing per request.
 */
function precompressedAssets(): Plugin {
  return {
    name: 'berth-precompressed-assets',
    apply: 'build',
    async writeBundle(options) {
      const assets = path.join(options.dir ?? '', 'assets');
      for (const name of await readdir(assets)) {
        if (!/\.(js|css|svg|map)$/.test(name)) continue;
        const body = await readFile(path.join(assets, name));
        await writeFile(path.join(assets, `${name}.gz`), await promisify(gzip)(body, { level: 9 }));
        await writeFile(
          path.join(assets, `${name}.br`),
          await promisify(brotliCompress)(body, { params: { [constants.BROTLI_PARAM_QUALITY]: constants.BROTLI_MAX_QUALITY } }),
        );
      }
    },
  };
}

/**
 * The dashboard's build: `npm run build` runs it after the server's `tsc`, writing
 * dist/dashboard (index.html and hashed assets/ that http/dashboard.ts serves). Everything
 * is bundled: the page loads nothing from another origin.
 */
export default defineConfig({
  root: here('.'),
  base: '/',
  publicDir: false,
  plugins: [precompressedAssets()],
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
