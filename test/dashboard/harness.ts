import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { build } from 'vite';
import { deadline } from '../support/deadline.js';
import { startTestServer, type TestServer, type TestServerOptions } from '../support/server.js';
import { seriousViolations } from './axe.js';

/** Debian's chromium (scripts/setup-browser.sh installs it): no test downloads a browser. */
export const CHROMIUM = process.env.BERTH_TEST_CHROMIUM ?? '/usr/bin/chromium';
/** Why the browser tests cannot run here, or null. */
export const browserAbsent = fs.existsSync(CHROMIUM) ? null : `${CHROMIUM} is not installed (bash scripts/setup-browser.sh installs it)`;

export const WAIT = deadline(20_000);

export interface DashboardHarness {
  server: TestServer;
  browser: Browser;
  /** Serious and critical axe violations of every screen checked, as `screen: rule: elements`. */
  violations: string[];
  checkAccessibility(page: Page, screen: string): Promise<void>;
  /** A new browser context signed in with `key`, having opened `at` first (a deep link survives sign-in). */
  signedIn(key: string, at?: string): Promise<Page>;
  close(): Promise<void>;
}

/** The dashboard as `npm run build` makes it from this checkout, a fresh Berth serving it (with `options`), and Chromium. */
export async function startDashboard(options: TestServerOptions = {}): Promise<DashboardHarness> {
  const outDir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-dashboard-'));
  let server: TestServer | undefined;
  try {
    await build({
      configFile: path.resolve(import.meta.dirname, '../../src/dashboard/vite.config.ts'),
      build: { outDir, emptyOutDir: true },
      logLevel: 'error',
    });
    server = await startTestServer('sqlite', { ...options, overrides: { ...options.overrides, dashboardDir: outDir } });
    const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
    const violations: string[] = [];
    const started = server;
    const checkAccessibility = async (page: Page, screen: string) => {
      violations.push(...(await seriousViolations(page)).map((line) => `${screen}: ${line}`));
    };
    return {
      server: started,
      browser,
      violations,
      checkAccessibility,
      async signedIn(key, at = '/') {
        // bypassCSP: only so the accessibility check can inject axe-core; the dashboard's own code needs nothing inline.
        const page = await (await browser.newContext({ bypassCSP: true })).newPage();
        page.setDefaultTimeout(WAIT);
        await page.goto(`${started.url}${at}`);
        await page.getByLabel('API key').waitFor();
        await checkAccessibility(page, 'sign-in');
        await page.getByLabel('API key').fill(key);
        await page.getByRole('button', { name: 'Sign in' }).click();
        await page.getByTestId('who').waitFor();
        return page;
      },
      async close() {
        await browser.close();
        await started.close();
        fs.rmSync(outDir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await server?.close();
    fs.rmSync(outDir, { recursive: true, force: true });
    throw error;
  }
}
