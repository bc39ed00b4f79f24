import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemGate } from '@rampart/plugin-kit/testing';
import { seedOrg, type TestOrg } from '@rampart/server/testing';
import { CHROMIUM, SHOTS, startConsoleHarness, type ConsoleHarness } from './harness.ts';

/*
 * The console's Import page (issue 37, item 5) in a real Chromium against a real server: a CSV
 * with one bad row pasted, its dry-run preview row by row, the import, the reports it made, and a
 * second import of the same file reporting nothing twice; a STIX bundle chosen as a file picks
 * its format.
 */
const CSV = ['value,kind,confidence,source', '45.79.1.1,ipv4,0.9,import-e2e', 'evil-import.example,domain,0.8,', '45.79.1.2,ipv4,2,import-e2e', '45.79.1.3,ipv4,,import-e2e', ''].join('\n');

describe.skipIf(systemGate('console in Chromium', { commands: [CHROMIUM] }))('console import', { timeout: 180_000 }, () => {
  let h: ConsoleHarness;
  let acme: TestOrg;

  beforeAll(async () => {
    h = await startConsoleHarness();
    acme = await seedOrg(h.store, { credits: 500, name: 'Import Acme' });
  }, 120_000);

  afterAll(async () => {
    await h?.close();
  });

  it('previews a CSV with one bad row, imports the good rows as reports, and reports nothing twice', async () => {
    const page = await h.signedIn(acme.keys.contributor, 1440);
    await page.getByRole('link', { name: 'Import', exact: true }).click();
    await page.getByRole('heading', { name: 'Import', level: 1 }).waitFor();
    await page.getByLabel('Or paste its content').fill(CSV);
    await page.getByLabel('Format').selectOption('csv');
    // Nothing previewed yet: nothing to import.
    expect(await page.getByRole('button', { name: 'Import', exact: true }).isDisabled()).toBe(true);
    await page.getByRole('button', { name: 'Preview' }).click();

    const rows = async (name: string) => {
      const table = page.getByRole('table', { name });
      await table.waitFor();
      return Promise.all((await table.locator('tbody tr').all()).map((tr) => tr.locator('td').allTextContents()));
    };
    expect(await page.getByTestId('import-counts').textContent()).toBe('4 rows: 3 would be reported, 1 refused.');
    expect(await rows('Preview rows')).toEqual([
      ['1', '45.79.1.1', 'ipv4', 'would be reported', '—'],
      ['2', 'evil-import.example', 'domain', 'would be reported', '—'],
      ['3', '45.79.1.2', 'ipv4', 'refused', 'malformed: confidence 2 is not a number from 0 to 1'],
      ['4', '45.79.1.3', 'ipv4', 'would be reported', '—'],
    ]);
    // A dry run reported nothing.
    expect((await h.api('GET', '/indicators?kind=ipv4&source=import-e2e', acme.keys.reader)).json).toEqual({ items: [], next_page: null });
    // Focus is on the answer's heading.
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Preview');
    await page.screenshot({ path: `${SHOTS}/import-preview-1440.png`, fullPage: true });

    await page.getByRole('button', { name: 'Import', exact: true }).click();
    await page.getByRole('heading', { name: 'Imported', level: 2 }).waitFor();
    expect(await page.getByTestId('import-counts').textContent()).toBe('4 rows: 3 reported, 0 already imported, 1 refused.');
    expect((await rows('Imported rows')).map((r) => r[3])).toEqual(['reported', 'reported', 'refused', 'reported']);

    // The reports: two addresses and a domain of this organization, at the file's confidence.
    const ipv4 = (await h.api('GET', '/indicators?kind=ipv4&source=import-e2e', acme.keys.reader)).json as { items: Array<{ value: string; members: number; events: number; sources: string[] }> };
    expect(ipv4.items.map((i) => [i.value, i.members, i.events, i.sources]).sort((a, b) => String(a[0]).localeCompare(String(b[0])))).toEqual([
      ['45.79.1.1', 1, 1, ['import-e2e']],
      ['45.79.1.3', 1, 1, ['import-e2e']],
    ]);
    const domain = await h.api('GET', '/domains/evil-import.example', acme.keys.reader);
    expect(domain.status).toBe(200);
    expect(domain.json).toEqual(expect.objectContaining({ total_members: 1, total_reports: 1 }));
    expect((await h.api('GET', '/ips/45.79.1.2', acme.keys.reader)).json).toEqual(expect.objectContaining({ body: [] }));

    // The same file again: previewed and imported, it reports nothing twice.
    await page.getByRole('button', { name: 'Preview' }).click();
    await page.getByRole('heading', { name: 'Preview', level: 2 }).waitFor();
    await page.getByRole('button', { name: 'Import', exact: true }).click();
    await page.getByRole('heading', { name: 'Imported', level: 2 }).waitFor();
    expect(await page.getByTestId('import-counts').textContent()).toBe('4 rows: 0 reported, 3 already imported, 1 refused.');
    const again = (await h.api('GET', '/indicators?kind=ipv4&source=import-e2e', acme.keys.reader)).json as { items: Array<{ events: number }> };
    expect(again.items.map((i) => i.events)).toEqual([1, 1]);
    await page.screenshot({ path: `${SHOTS}/import-duplicate-1440.png`, fullPage: true });
    await page.context().close();
  });

  it('picks the format of a chosen file, shows the preview as cards at 390 px, and names the content a format refuses at its field', async () => {
    const bundle = {
      type: 'bundle',
      id: 'bundle--5d0092c5-5f74-4287-9642-33f4c354e56d',
      objects: [
        { type: 'indicator', spec_version: '2.1', id: 'indicator--8e2e2d2b-17d4-4cbf-938f-98ee46b3cd3f', created: '2026-11-01T00:00:00.000Z', modified: '2026-11-01T00:00:00.000Z', pattern: "[ipv4-addr:value = '45.79.2.1']", pattern_type: 'stix', valid_from: '2026-11-01T00:00:00Z', confidence: 80 },
        { type: 'indicator', spec_version: '2.1', id: 'indicator--9e2e2d2b-17d4-4cbf-938f-98ee46b3cd3f', created: '2026-11-01T00:00:00.000Z', modified: '2026-11-01T00:00:00.000Z', pattern: "[ipv4-addr:value = '192.168.1.1']", pattern_type: 'stix', valid_from: '2026-11-01T00:00:00Z' },
      ],
    };
    const page = await h.signedIn(acme.keys.contributor, 390);
    await page.getByRole('link', { name: 'Import', exact: true }).click();
    await page.getByLabel('File', { exact: true }).setInputFiles({ name: 'feed.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(bundle)) });
    await expect.poll(() => page.getByLabel('Format').inputValue()).toBe('stix21');
    await page.getByRole('button', { name: 'Preview' }).click();
    expect(await page.getByTestId('import-counts').textContent()).toBe('2 rows: 1 would be reported, 1 refused.');
    const table = page.getByRole('table', { name: 'Preview rows' });
    expect(await table.locator('tbody tr').first().evaluate((tr) => getComputedStyle(tr).display)).toBe('flex');
    expect(await table.locator('tbody tr').nth(1).locator('td[data-label="Why"]').textContent()).toMatch(/^non_public_address: /);
    expect(await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)).toBeLessThanOrEqual(0);
    await page.screenshot({ path: `${SHOTS}/import-stix-390.png`, fullPage: true });

    // A file not of the chosen format: the server's 400 names the content, shown at the field.
    await page.getByLabel('Or paste its content').fill(CSV);
    await page.getByLabel('Format').selectOption('misp');
    await page.getByRole('button', { name: 'Preview' }).click();
    const content = page.getByLabel('Or paste its content');
    await expect.poll(() => content.getAttribute('aria-invalid')).toBe('true');
    const message = await page.locator('#import-content-err').textContent();
    expect(message).not.toBe('');
    expect(await page.getByRole('alert').textContent()).toBe(`400: body.content: ${message}`);
    // The answer shown is the earlier one's, and its content is no longer what is in the field.
    expect(await page.getByRole('button', { name: 'Import', exact: true }).isDisabled()).toBe(true);
    expect(h.consoleErrors.splice(0)).toEqual(['Failed to load resource: the server responded with a status of 400 (Bad Request)']);
    await page.context().close();
  });
});
