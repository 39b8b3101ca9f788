import { join } from 'node:path'
import type { Browser, Page } from 'playwright'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { keyHash } from '../dashboard/seed'
import { postJson } from '../support/http'
import { type TestServer, startTestServer } from '../support/server'
import { NO_BROWSER, ROOT, ensureRendererBuilt, launchChromium } from './browser'

// A team server's dashboard in Chromium: the member grouping and filter appear once more than
// one member has reported, and the filter narrows the breakdown to that member's calls.

const ALICE = 'team-token-alice-7f3c9a1e5b'
const BOB = 'team-token-bob-2d8e4f6a0c'
let t: TestServer
let browser: Browser
let page: Page

function call(id: number, model: string, cost: number) {
  return {
    id, t: new Date(Date.now() - 60_000).toISOString(), provider: 'anthropic', model, api_key_hash: keyHash(`sk-${id}`), key_hint: '…',
    tenant: '', agent: 'claude-code', session: `s-${id}`, status: 200, streamed: true, input_tokens: 100, output_tokens: 10,
    cache_read_tokens: 0, cache_write_tokens: 0, reasoning_tokens: 0, cost_usd: cost, priced: true, estimated: false, latency_ms: 50,
  }
}

beforeAll(async () => {
  if (NO_BROWSER) return
  ensureRendererBuilt()
  process.env.BURNRATE_RENDERER_DIR = join(ROOT, 'out/renderer')
  t = await startTestServer({ team: { members: [{ name: 'alice', token: ALICE }, { name: 'bob', token: BOB }] } })
  await send(ALICE, [call(1, 'claude-sonnet-4-5', 1.25)])
  browser = await launchChromium()
  page = await (await browser.newContext({ viewport: { width: 1440, height: 900 } })).newPage()
  await page.goto(`${t.url}/`)
}, 120_000)

async function send(token: string, calls: unknown[]): Promise<void> {
  expect((await postJson(`${t.url}/api/ingest`, { calls }, { authorization: `Bearer ${token}` })).status).toBe(200)
}

afterAll(async () => {
  await browser?.close()
  await t?.cleanup()
  delete process.env.BURNRATE_RENDERER_DIR
})

describe.skipIf(NO_BROWSER !== null)('a team server\'s dashboard', { timeout: 60_000 }, () => {
  it('looks as on a single Burnrate while one member has reported', async () => {
    await expect.poll(() => page.getByTestId('breakdown-row').count(), { timeout: 15_000 }).toBe(1)
    expect(await page.getByTestId('member-filter').count()).toBe(0)
    expect(await page.getByTestId('group-by').locator('[data-group="member"]').count()).toBe(0)
  })

  it('breaks spend down by member and filters the breakdown to one member', async () => {
    await send(BOB, [call(1, 'claude-opus-4-1', 3.5), call(2, 'claude-sonnet-4-5', 0.5)])
    const member = page.getByTestId('group-by').locator('[data-group="member"]')
    await expect.poll(() => member.count(), { timeout: 15_000 }).toBe(1)
    await member.click()
    await expect.poll(() => page.getByTestId('breakdown-table').getAttribute('data-group')).toBe('member')
    const rows = () => page.getByTestId('breakdown-row').allTextContents()
    const keys = () => page.locator('[data-testid="breakdown-row"] td.key').allTextContents()
    await expect.poll(async () => (await keys()).map((k) => k.trim()), { timeout: 15_000 }).toEqual(['bob', 'alice'])
    expect((await rows())[0]).toContain('$4.00')

    await page.getByTestId('group-by').locator('[data-group="model"]').click()
    await page.getByTestId('member-filter').selectOption('bob')
    await expect.poll(() => page.url()).toContain('member=bob')
    // Unfiltered, the model breakdown also has two rows (sonnet's $1.75 is alice's $1.25 and bob's
    // $0.50): wait for bob's own figures, not for the row count.
    await expect.poll(async () => (await rows()).join('\n'), { timeout: 15_000 }).toContain('$0.50')
    expect(await rows()).toHaveLength(2)
    const text = (await rows()).join('\n')
    expect(text).toContain('claude-opus-4-1')
    expect(text).toContain('$3.50')
    expect(text).not.toContain('$1.75')
    expect(await page.getByTestId('export-csv').getAttribute('href')).toContain('member=bob')
  })
})
