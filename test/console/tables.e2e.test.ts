import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemGate } from '@rampart/plugin-kit/testing';
import { seedOrg, type TestOrg, createApiKey, createUser } from '@rampart/server/testing';
import { CHROMIUM, SHOTS, startConsoleHarness, type ConsoleHarness } from './harness.ts';

/*
 * Tables people can read (issue 37, item 4), in a real Chromium against a real server, at 390 and
 * 1440 px in both colour schemes: values in one unbroken monospace line, cards under 600 px, the
 * totals line, sortable headers (mouse and keyboard), a click on an indicator running its
 * look-up, rounded score components with their meaning, today's live figures in the per-band
 * chart, and focus after a confirmation. Screenshots: the Decisions page with reasons and actors,
 * the alliance view, a phone-width table.
 */
const ROWS = 60;
/** 45.78.<i>.<10 + i>: addresses whose text order differs from their numeric order (45.78.10.20 < 45.78.9.19 as text). */
const address = (i: number) => `45.78.${i}.${10 + i}`;
const octets = (ip: string) => ip.split('.').reduce((n, o) => n * 256 + Number(o), 0);
/** The components checked, with the label and meaning the console gives them. */
const COMPONENTS = {
  baseWeight: ['Base weight', 'Sum over organizations of trust × confidence × severity factor'],
  weight: ['Weight', 'Base weight + repeat weight'],
  saturation: ['Saturation', '1 − exp(−weight / 7): how close the weight is to the maximum score, from 0 to 1'],
  raw: ['Raw score', '1000 × saturation, before rounding and clamping to 1–1000'],
} as const;
/** The console's rounding: 3 significant digits below 1, 2 decimals below 100, whole above. */
const rounded = (v: number) => (Math.abs(v) >= 100 ? Math.round(v) : Math.abs(v) >= 1 ? Number(v.toFixed(2)) : Number(v.toPrecision(3)));

describe.skipIf(systemGate('console in Chromium', { commands: [CHROMIUM] }))('console tables', { timeout: 240_000 }, () => {
  let h: ConsoleHarness;
  let acme: TestOrg;
  let operatorKey: string;
  const signedIn = (key: string, width: number, colorScheme: 'light' | 'dark' = 'light') => h.signedIn(key, width, { colorScheme });
  const ok = async (method: string, path: string, key: string, body?: unknown) => {
    const res = await h.api(method, path, key, body);
    expect(res.status, `${method} ${path}: ${JSON.stringify(res.json)}`).toBeLessThan(300);
    return res.json;
  };

  beforeAll(async () => {
    h = await startConsoleHarness();
    acme = await seedOrg(h.store, { credits: 500, name: 'Tables Acme' });
    const username = `operator.${acme.org.gid.slice(-8).toLowerCase()}@example.org`;
    await createUser(h.store, { orgGid: acme.org.gid, username, role: 9 });
    operatorKey = (await createApiKey(h.store, { username })).key;
    for (let i = 1; i <= ROWS; i += 1) await ok('POST', '/ips', acme.keys.contributor, { ip: address(i), confidence: i % 2 ? 0.9 : 0.5, source: 'tables-ssh' });
    // Decisions with a reason, set by two different users.
    await ok('PUT', `/ips/${address(1)}`, acme.keys.admin, { decision: 1, reason: 'brute-forced our SSH for a week' });
    await ok('PUT', `/ips/${address(2)}`, acme.keys.contributor, { decision: 0, reason: "our partner's scanner" });
    await ok('PUT', '/domains/tables-partner.example', acme.keys.contributor, { decision: 0, reason: 'partner portal' });
    // Agents for the alliance view: one that never checked in, one deactivated.
    for (const gaid of ['RMP-AGENT-ID-TABLES001', 'RMP-AGENT-ID-TABLES002'])
      await ok('POST', '/agents', acme.keys.admin, { gaid, ts: Date.now(), score_threshold: 500, start_from: 0, version: 'v1.0.0', proxy: 'LOCAL', sync_time: 5, maximum_rules: 1000, ips: { csv: { active: true, csv_logs: '/tmp/list.csv', csv_reload_command: '' } } });
    await ok('DELETE', '/agents/RMP-AGENT-ID-TABLES002', acme.keys.admin);
  }, 180_000);

  afterAll(async () => {
    await h?.close();
  });

  /** Facts of every cell of a table: whether it overflows, and each value's line boxes. */
  const cellFacts = (page: Page, table: string) =>
    page.evaluate((name) => {
      const t = document.querySelector(`table[aria-label="${name}"]`)!;
      const cells = [...t.querySelectorAll('tbody td')] as HTMLElement[];
      const values = [...t.querySelectorAll('tbody .value')] as HTMLElement[];
      const lineHeight = parseFloat(getComputedStyle(values[0]!).lineHeight);
      return {
        rowDisplay: getComputedStyle(t.querySelector('tbody tr')!).display,
        overflowing: cells.filter((c) => c.scrollWidth > c.clientWidth + 1).map((c) => `${c.className} ${c.textContent} ${c.scrollWidth} ${c.clientWidth}`),
        wraps: cells.filter((c) => getComputedStyle(c).overflowWrap !== 'normal' || getComputedStyle(c).wordBreak !== 'normal').length,
        // A value on one line has one line box, as tall as one line of its font.
        brokenValues: values.filter((v) => v.getClientRects().length !== 1 || v.getBoundingClientRect().height > lineHeight * 1.2).map((v) => v.textContent),
        values: values.map((v) => v.textContent),
        // Dates: one line each (their hyphens once broke "2026-11-" from "29 10:13 UTC").
        brokenTimes: [...t.querySelectorAll('tbody .time')].filter((v) => v.getClientRects().length !== 1 || v.getBoundingClientRect().height > lineHeight * 1.2).map((v) => v.textContent),
        font: getComputedStyle(values[0]!).fontFamily,
        headers: [...t.querySelectorAll('thead th')].filter((th) => (th as HTMLElement).offsetParent !== null).length,
      };
    }, table);

  it('shows the indicators as readable tables at 1440 px and as cards at 390 px, light and dark; 50 rows at 390 px stay under 10,000 px', async () => {
    for (const [width, scheme] of [[1440, 'light'], [1440, 'dark'], [390, 'light'], [390, 'dark']] as const) {
      const page = await signedIn(acme.keys.contributor, width, scheme);
      await page.getByRole('link', { name: 'Indicators', exact: true }).click();
      const table = page.getByRole('table', { name: 'Indicators' });
      await expect.poll(() => table.locator('tbody tr').count()).toBe(50);
      expect(await page.getByTestId('totals').textContent()).toBe('Rows 1–50, more on the next page');
      await page.screenshot({ path: `${SHOTS}/indicators-${width}-${scheme}.png`, fullPage: true });
      const facts = await cellFacts(page, 'Indicators');
      expect(facts.font).toMatch(/monospace/);
      expect(facts.values).toHaveLength(50);
      expect(facts.brokenValues, `${width} ${scheme}`).toEqual([]);
      expect(facts.brokenTimes, `${width} ${scheme}`).toEqual([]);
      expect(facts.overflowing, `${width} ${scheme}`).toEqual([]);
      expect(facts.wraps).toBe(0);
      expect(await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)).toBeLessThanOrEqual(0);
      if (width === 1440) {
        expect(facts.rowDisplay).toBe('table-row');
        // Every header of a data column plus the select-all one.
        expect(facts.headers).toBe(10);
      } else {
        expect(facts.rowDisplay).toBe('flex');
        // Only the select-all box is left of the header row.
        expect(facts.headers).toBe(1);
        const sizes = await page.evaluate(() => {
          const rows = [...document.querySelectorAll('table[aria-label="Indicators"] tbody tr')].map((r) => r.getBoundingClientRect());
          return { top: rows[0]!.top + window.scrollY, tallest: Math.max(...rows.map((r) => r.height)), page: document.documentElement.scrollHeight };
        });
        // The phone-width table: its first cards.
        await page.screenshot({ path: `${SHOTS}/indicators-cards-390-${scheme}.png`, fullPage: true, clip: { x: 0, y: sizes.top - 40, width: 390, height: 700 } });
        // A card is its title line (at most 27 px) and at most six lines of "label: value" pairs
        // (6 × 18.9 px: .875rem at line-height 1.35) inside 16 px of padding and border: 160 px.
        // The page: the table's top (filters, bulk actions), 50 cards with their 8 px gaps, and
        // 300 px for the pager and margins. Before, 16,263 px.
        expect(sizes.tallest, `card height at ${scheme}`).toBeLessThanOrEqual(160);
        expect(sizes.page).toBeLessThanOrEqual(sizes.top + 50 * (160 + 8) + 300);
        expect(sizes.page).toBeLessThan(10_000);
        console.log(`indicators at 390 px ${scheme}: page ${sizes.page} px, tallest card ${sizes.tallest} px, table from ${Math.round(sizes.top)} px`);
      }
      await page.getByRole('button', { name: 'Next page' }).click();
      await page.getByText('Rows 51–60 of 60').waitFor();
      await page.context().close();
    }
  });

  it('sorts a column by a click or from the keyboard, with aria-sort, numbers and addresses in their own order', async () => {
    const page = await signedIn(acme.keys.contributor, 1440);
    await page.getByRole('link', { name: 'Indicators', exact: true }).click();
    const table = page.getByRole('table', { name: 'Indicators' });
    await expect.poll(() => table.locator('tbody tr').count()).toBe(50);
    const shown = await table.locator('tbody .value').allTextContents();
    const header = (name: string) => table.locator('thead th', { has: page.getByRole('button', { name }) });
    expect(await header('Indicator').getAttribute('aria-sort')).toBe('none');

    // The keyboard: Tab to the header's button, Enter sorts ascending, Space descending.
    await table.getByRole('button', { name: 'Indicator' }).focus();
    await page.keyboard.press('Enter');
    expect(await header('Indicator').getAttribute('aria-sort')).toBe('ascending');
    expect(await table.locator('tbody .value').allTextContents()).toEqual([...shown].sort((a, b) => octets(a) - octets(b)));
    await page.keyboard.press('Space');
    expect(await header('Indicator').getAttribute('aria-sort')).toBe('descending');
    expect(await table.locator('tbody .value').allTextContents()).toEqual([...shown].sort((a, b) => octets(b) - octets(a)));
    expect(await page.getByTestId('totals').textContent()).toBe('Rows 1–50, more on the next page · sorted by indicator, descending (this page)');

    // The mouse: Live score ascending; the other header is back to none.
    await table.getByRole('button', { name: 'Live score' }).click();
    expect(await header('Live score').getAttribute('aria-sort')).toBe('ascending');
    expect(await header('Indicator').getAttribute('aria-sort')).toBe('none');
    const scores = (await table.locator('tbody td[data-label="Live score"]').allTextContents()).map(Number);
    expect(scores).toEqual([...scores].sort((a, b) => a - b));
    // A third click returns to the API's order (most recently changed first).
    await table.getByRole('button', { name: 'Live score' }).click();
    await table.getByRole('button', { name: 'Live score' }).click();
    expect(await header('Live score').getAttribute('aria-sort')).toBe('none');
    expect(await table.locator('tbody .value').allTextContents()).toEqual(shown);
    await page.context().close();
  });

  it('runs the look-up of a clicked indicator and shows its score components rounded, with their meaning', async () => {
    const page = await signedIn(acme.keys.contributor, 1440);
    await page.getByRole('link', { name: 'Indicators', exact: true }).click();
    const target = address(17);
    await page.getByRole('table', { name: 'Indicators' }).getByRole('link', { name: target, exact: true }).click();
    // No "Look up" pressed: the record is there.
    const article = page.getByRole('article', { name: 'Indicator' });
    await article.getByRole('heading', { name: `${target} ipv4` }).waitFor();
    expect(await page.getByLabel('IPv4, domain, URL or digest').inputValue()).toBe(target);
    const explain = ((await ok('GET', `/ips/${target}?explain=yes`, acme.keys.contributor)) as { body: Array<{ explain: Record<string, unknown> }> }).body[0]!.explain;
    const components = article.getByTestId('score-components');
    for (const [key, [label, meaning]] of Object.entries(COMPONENTS)) {
      const dt = components.locator(`dt:text-is("${label}")`);
      expect(await dt.getAttribute('title')).toBe(meaning);
      const dd = components.locator(`dt:text-is("${label}") + dd`);
      expect(await dd.textContent()).toBe(`${String(rounded(explain[key] as number))}${meaning}`);
    }
    // Three significant digits at most (the API gives six decimals).
    expect(await components.locator('dt:text-is("Saturation") + dd').textContent()).toMatch(/^0\.0*[1-9]\d{0,2}1 − exp/);
    await page.context().close();
  });

  it("puts today's live figures in the per-band chart: the day the data arrived is not empty", async () => {
    // An organization whose day was snapshotted (by a first view) before its data arrived.
    const bands = await seedOrg(h.store, { credits: 100, name: 'Tables Bands' });
    const before = (await ok('GET', '/overview/history?days=30', bands.keys.admin)) as { indicators_per_band: Array<{ day: number; low: number; medium: number; high: number; critical: number }> };
    const today = Math.floor(Date.now() / 1000 / 86_400) * 86_400;
    // Today's snapshot: the alliance's indicators this organization saw then (acme's), not yet its own.
    const snapshot = before.indicators_per_band.filter((b) => b.day === today).map((b) => b.low + b.medium + b.high + b.critical);
    expect(snapshot).toEqual([ROWS]);
    for (const ip of ['45.78.200.1', '45.78.200.2', '45.78.200.3']) await ok('POST', '/ips', bands.keys.contributor, { ip, confidence: 1, source: 'tables-bands' });
    const page = await signedIn(bands.keys.admin, 1440);
    const bars = await page.getByRole('img', { name: /^IPv4 indicators by band:/ }).getAttribute('aria-label');
    const live = [...bars!.matchAll(/(LOW|MEDIUM|HIGH|CRITICAL) (\d+)/g)].map((m) => Number(m[2]));
    expect(live.reduce((a, b) => a + b, 0)).toBe(ROWS + 3);
    const figures = page.getByTestId('chart-bands').locator('xpath=..').locator('details');
    await figures.locator('summary').click();
    const last = figures.locator('tbody tr').last();
    expect(await last.locator('th').textContent()).toBe(new Date(today * 1000).toLocaleDateString('en-US', { month: 'short', day: 'numeric', timeZone: 'UTC' }));
    expect((await last.locator('td').allTextContents()).map(Number)).toEqual(live);
    await page.context().close();
  });

  it('returns focus after a confirmation: to Revoke after Cancel, to the outcome after Yes', async () => {
    const created = (await ok('POST', '/keys', acme.keys.admin, { label: 'focus test' })) as { key_id: string };
    const page = await signedIn(acme.keys.admin, 1440);
    await page.getByRole('link', { name: 'API keys', exact: true }).click();
    const row = page.locator(`tr[data-key-id="${created.key_id}"]`);
    await row.getByRole('button', { name: 'Revoke' }).click();
    // The question takes focus on its safe answer.
    await expect.poll(() => page.evaluate(() => document.activeElement?.textContent)).toBe('Cancel');
    await page.keyboard.press('Enter');
    await expect.poll(() => page.evaluate(() => `${document.activeElement?.closest('tr')?.getAttribute('data-key-id')} ${document.activeElement?.textContent}`)).toBe(`${created.key_id} Revoke`);
    await page.keyboard.press('Enter');
    await row.getByRole('button', { name: 'Yes, revoke' }).click();
    const outcome = `Key ${created.key_id} revoked: programs using it are refused from now on.`;
    await expect.poll(() => page.evaluate(() => document.activeElement?.textContent)).toBe(outcome);
    expect(await page.evaluate(() => document.activeElement === document.body)).toBe(false);
    // The audit log's totals line: every entry of the organization, on one page.
    const entries = ((await ok('GET', '/audit?page_size=500', acme.keys.admin)) as { items: unknown[] }).items.length;
    expect(entries).toBeLessThan(50);
    await page.getByRole('link', { name: 'Audit log', exact: true }).click();
    await expect.poll(() => page.getByTestId('totals').textContent()).toBe(`Rows 1–${entries} of ${entries}`);
    await page.context().close();
  });

  it('screenshots the Decisions page with reasons and actors, and the alliance view', async () => {
    const decided = ((await ok('GET', '/decisions', acme.keys.reader)) as { items: Array<{ value: string; set_by: string | null; reason: string | null }> }).items;
    for (const width of [1440, 390]) {
      const page = await signedIn(acme.keys.admin, width);
      await page.getByRole('link', { name: 'Decisions', exact: true }).click();
      const table = page.getByRole('table', { name: 'Decisions' });
      await expect.poll(() => table.locator('tbody tr').count()).toBe(3);
      for (const d of decided) {
        const row = table.locator('tbody tr', { has: page.getByRole('link', { name: d.value, exact: true }) });
        expect(await row.locator('td[data-label="Set by"]').textContent()).toBe(d.set_by);
        expect(await row.locator('td[data-label="Reason"]').textContent()).toBe(d.reason);
      }
      expect(new Set(decided.map((d) => d.set_by)).size).toBe(2);
      expect(await page.getByTestId('totals').textContent()).toBe('Rows 1–3 of 3');
      // Every column is in view: the table is not wider than its scroll box (at 1440 px the Reason column was cut off).
      expect(await table.evaluate((t) => t.scrollWidth <= (t.closest('.table-wrap') ?? t.parentElement!).clientWidth)).toBe(true);
      await page.screenshot({ path: `${SHOTS}/decisions-reasons-${width}.png`, fullPage: true });
      await page.context().close();
    }
    for (const [width, scheme] of [[1440, 'light'], [390, 'dark']] as const) {
      const page = await signedIn(operatorKey, width, scheme);
      await page.getByRole('link', { name: 'Alliance', exact: true }).click();
      await page.getByRole('heading', { name: 'Alliance', level: 1 }).waitFor();
      await expect.poll(() => page.locator('[aria-busy="true"]').count()).toBe(0);
      const agents = page.getByRole('table', { name: 'Agents of the alliance' });
      expect(await agents.locator('tbody td.primary').allTextContents()).toEqual([expect.stringContaining('RMP-AGENT-ID-TABLES001'), expect.stringContaining('RMP-AGENT-ID-TABLES002')]);
      expect(await agents.locator('tbody tr').first().evaluate((tr) => getComputedStyle(tr).display)).toBe(width < 600 ? 'flex' : 'table-row');
      await page.screenshot({ path: `${SHOTS}/alliance-${width}-${scheme}.png`, fullPage: true });
      await page.context().close();
    }
  });
});
