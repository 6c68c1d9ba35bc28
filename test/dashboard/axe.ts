import axe from 'axe-core';
import type { Page } from 'playwright-core';

/**
 * The serious and critical accessibility violations axe-core finds on the page as it is
 * now, as `rule: element…` lines. The page's context must bypass its CSP (`bypassCSP`), as
 * axe is injected as a script of no origin of the page.
 */
export async function seriousViolations(page: Page): Promise<string[]> {
  await page.addScriptTag({ content: axe.source });
  const violations = await page.evaluate(async () => {
    type Result = { passes: unknown[]; violations: { id: string; impact: string | null; nodes: { target: unknown[] }[] }[] };
    const injected = (window as unknown as { axe: { run(): Promise<Result> } }).axe;
    const result = await injected.run();
    if (result.passes.length === 0) throw new Error('axe checked nothing on this page');
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, targets: v.nodes.map((n) => JSON.stringify(n.target)) }));
  });
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id}: ${v.targets.slice(0, 3).join(', ')}`);
}
