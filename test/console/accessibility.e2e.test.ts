import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemGate } from '@rampart/plugin-kit/testing';
import { seedOrg, type TestOrg, createApiKey, createUser } from '@rampart/server/testing';
import { CHROMIUM, startConsoleHarness, type ConsoleHarness } from './harness.ts';

/*
 * Accessibility of every console page, in a real headless Chromium against a real server:
 * axe-core (the engine behind Lighthouse's and most browsers' accessibility audits) finds no
 * moderate, serious or critical violation at 390 and 1440 pixels in both themes, and the console works
 * from the keyboard alone: a skip link, every page reachable by Tab and Enter, focus moved to
 * the new page's heading, visible focus.
 */
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
const GAID = 'RMP-AGENT-ID-A11Y0001';

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: Array<{ target: string[] }>;
}

describe.skipIf(systemGate('console in Chromium', { commands: [CHROMIUM] }))('console accessibility', { timeout: 180_000 }, () => {
  let h: ConsoleHarness;
  let acme: TestOrg;
  let operatorKey: string;

  const signedIn = (key: string, width: number, colorScheme: 'light' | 'dark' = 'light') => h.signedIn(key, width, { colorScheme, bypassCSP: true });
  const api = async (method: string, path: string, key: string, body?: unknown) => {
    const res = await h.api(method, path, key, body);
    expect(res.status, `${method} ${path}: ${JSON.stringify(res.json)}`).toBeLessThan(300);
  };

  /** axe-core's moderate, serious and critical findings on what the page shows now, one line each. */
  async function audit(page: Page): Promise<string[]> {
    if (!(await page.evaluate(() => 'axe' in window))) await page.addScriptTag({ content: AXE_SOURCE });
    const violations = await page.evaluate(async () => {
      const axe = (window as unknown as { axe: { run(context: Document, options: object): Promise<{ violations: AxeViolation[] }> } }).axe;
      return (await axe.run(document, { resultTypes: ['violations'] })).violations;
    });
    return violations
      .filter((v) => v.impact === 'moderate' || v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.impact} ${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`);
  }

  beforeAll(async () => {
    h = await startConsoleHarness();
    acme = await seedOrg(h.store, { credits: 500, name: 'A11y Acme' });
    // Two organizations: the Organizations page once named each one's forms alike (landmark-unique).
    await seedOrg(h.store, { name: 'A11y Other' });
    const username = `operator.${acme.org.gid.slice(-8).toLowerCase()}@example.org`;
    await createUser(h.store, { orgGid: acme.org.gid, username, role: 9 });
    operatorKey = (await createApiKey(h.store, { username })).key;
    // Something on every page: a report, a decision, an agent, a key.
    await api('POST', '/ips', acme.keys.admin, { ip: '45.77.1.2', confidence: 0.9, source: 'ssh' });
    await api('POST', '/ips', acme.keys.admin, { ip: '45.77.1.3', confidence: 1, source: 'ssh', decision: 1 });
    await api('POST', '/agents', acme.keys.admin, { gaid: GAID, ts: Date.now(), score_threshold: 500, start_from: 0, version: 'v1.0.0', proxy: 'LOCAL', sync_time: 5, maximum_rules: 1000, ips: { csv: { active: true, csv_logs: '/tmp/list.csv', csv_reload_command: '' } } });
  }, 120_000);

  afterAll(async () => {
    await h?.close();
  });

  const PAGES = ['Overview', 'Look-up', 'Indicators', 'Decisions', 'Import', 'Agents', 'Organization', 'Secure VPN', 'API keys', 'Audit log', 'Organizations', 'Alliance'] as const;

  it('axe-core finds no moderate, serious or critical violation on any page, at 390 and 1440 px, light and dark', async () => {
    const found: string[] = [];
    for (const [width, scheme] of [[1440, 'light'], [390, 'light'], [1440, 'dark']] as const) {
      const signIn = await (await h.browser.newContext({ viewport: { width, height: 900 }, colorScheme: scheme, bypassCSP: true })).newPage();
      await signIn.goto(`${h.base}/console/`);
      await signIn.getByLabel('API key').waitFor();
      found.push(...(await audit(signIn)).map((v) => `sign-in ${width} ${scheme}: ${v}`));
      await signIn.context().close();

      const page = await signedIn(operatorKey, width, scheme);
      for (const name of PAGES) {
        await page.getByRole('link', { name, exact: true }).click();
        // This page's heading, not the one of the page before it.
        await page.getByRole('heading', { level: 1, name: name === 'Organization' ? 'Organization settings' : name, exact: true }).waitFor();
        await expect.poll(() => page.locator('[aria-busy="true"]').count()).toBe(0);
        found.push(...(await audit(page)).map((v) => `${name} ${width} ${scheme}: ${v}`));
      }
      await page.getByRole('link', { name: 'Agents', exact: true }).click();
      await page.getByRole('link', { name: GAID }).click();
      await page.getByRole('heading', { name: `Agent ${GAID}` }).waitFor();
      found.push(...(await audit(page)).map((v) => `agent ${width} ${scheme}: ${v}`));
      await page.getByRole('link', { name: 'Look-up', exact: true }).click();
      await page.getByLabel('IPv4, domain, URL or digest').fill('45.77.1.2');
      await page.getByRole('button', { name: 'Look up' }).click();
      await page.getByRole('article', { name: 'Indicator' }).waitFor();
      found.push(...(await audit(page)).map((v) => `look-up result ${width} ${scheme}: ${v}`));
      await page.getByRole('link', { name: 'Import', exact: true }).click();
      await page.getByLabel('Or paste its content').fill('value,kind,confidence,source\n45.77.9.9,ipv4,0.5,a11y\n10.0.0.1,ipv4,1,a11y\n');
      await page.getByRole('button', { name: 'Preview' }).click();
      await page.getByTestId('import-counts').waitFor();
      found.push(...(await audit(page)).map((v) => `import preview ${width} ${scheme}: ${v}`));
      await page.context().close();
    }
    expect(found).toEqual([]);

    // The audit can fail: an image without a text alternative planted on a page is found.
    const page = await signedIn(acme.keys.admin, 1440);
    // The overview drawn (while it loads there is no level-one heading, a moderate finding).
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    await expect.poll(() => page.locator('[aria-busy="true"]').count()).toBe(0);
    await page.evaluate(() => document.querySelector('main')!.insertAdjacentHTML('beforeend', '<img id="planted" src="data:image/gif;base64,R0lGODlhAQABAAAAACw=">'));
    expect(await audit(page)).toEqual(['critical image-alt: Images must have alternative text (#planted)']);
    await page.context().close();
  });

  it('works from the keyboard alone: skip link, Tab and Enter to every page, focus on the new heading, visible focus', async () => {
    const page = await signedIn(acme.keys.admin, 1440);
    await page.goto(`${h.base}/console/#/`);
    await page.getByRole('navigation', { name: 'Main' }).waitFor();
    // The first Tab lands on the skip link, which takes focus past the navigation to the page.
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Skip to content');
    await page.keyboard.press('Enter');
    expect(await page.evaluate(() => document.activeElement?.closest('main')?.id)).toBe('content');

    // Overview last: the console opened on it, and following the link to the page shown moves nothing.
    for (const name of [...PAGES.filter((p) => p !== 'Organizations' && p !== 'Alliance' && p !== 'Overview'), 'Overview']) {
      // From the top of the document, Tab until the navigation link has focus, then Enter. The
      // browser resumes Tab from where the blurred element was, so a page with many fields (the
      // Organization page) is walked through before the navigation comes round again.
      await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
      let focused = '';
      for (let i = 0; i < 60 && focused !== name; i += 1) {
        await page.keyboard.press('Tab');
        focused = await page.evaluate(() => (document.activeElement?.closest('nav') ? (document.activeElement.textContent ?? '') : ''));
      }
      expect(focused, `Tab reaches ${name}`).toBe(name);
      const outline = await page.evaluate(() => getComputedStyle(document.activeElement!).outlineStyle);
      expect(outline, `focus on ${name} is visible`).not.toBe('none');
      await page.keyboard.press('Enter');
      // Focus moves to the new page's heading, so reading and Tab continue from the content.
      const heading = name === 'Organization' ? 'Organization settings' : name;
      await expect.poll(() => page.evaluate(() => (document.activeElement?.tagName === 'H1' ? document.activeElement.textContent : null)), { timeout: 5_000 }).toBe(heading);
    }

    // A form submits with Enter: a look-up by keyboard.
    await page.getByRole('link', { name: 'Look-up', exact: true }).focus();
    await page.keyboard.press('Enter');
    await page.getByLabel('IPv4, domain, URL or digest').focus();
    await page.keyboard.type('45.77.1.2');
    await page.keyboard.press('Enter');
    await page.getByRole('article', { name: 'Indicator' }).waitFor();
    await page.context().close();
  });
});
