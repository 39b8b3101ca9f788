import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Browser } from 'playwright'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { NO_BROWSER, ROOT, launchChromium, openPage, serveBuiltRenderer } from '../e2e/browser'
import { type TestServer, startTestServer } from '../support/server'

/**
 * README's "Point your agents at it" table names a line (or a few) per agent and setup, and says
 * the dashboard's *Connect your agents* panel "shows the same lines with your server's real
 * address": every address line of every row (Foundry's, DeepSeek's…) must be in one of the
 * panel's tabs, with the address the page was opened at in place of 127.0.0.1:8787.
 */

const README = readFileSync(join(ROOT, 'README.md'), 'utf8')
const DEFAULT = 'http://127.0.0.1:8787'

/** Each row of the table: its agent, and the code spans holding the default address. */
function tableRows(): { agent: string; lines: string[] }[] {
  const at = README.indexOf('| agent or SDK | how |')
  expect(at, 'README has the agent table').toBeGreaterThan(0)
  const rows: { agent: string; lines: string[] }[] = []
  for (const line of README.slice(at).split('\n').slice(2)) {
    if (!line.startsWith('|')) break
    const agent = line.split('|')[1].trim()
    const lines = [...line.matchAll(/`([^`]*127\.0\.0\.1:8787[^`]*)`/g)].map((m) => m[1])
    rows.push({ agent, lines })
  }
  return rows
}

/** Whitespace aside: the panel spreads a JSON object or an SDK constructor over several lines. */
const squeeze = (s: string) => s.replace(/\s+/g, '')

let t: TestServer
let browser: Browser
let unserve: (() => void) | undefined

beforeAll(async () => {
  if (NO_BROWSER) return
  unserve = serveBuiltRenderer()
  t = await startTestServer({ timezone: 'UTC' })
  browser = await launchChromium()
}, 120_000)

afterAll(async () => {
  await browser?.close()
  await t?.cleanup()
  unserve?.()
})

describe.skipIf(NO_BROWSER !== null)("the Connect panel and README's agent table", { timeout: 120_000 }, () => {
  it("shows every row's lines with the server's real address", async () => {
    const page = await openPage(browser, `${t.url}/`)
    const panel = page.locator('#connect')
    await expect.poll(() => panel.getByRole('tab').count()).toBeGreaterThan(0)
    let shown = ''
    for (const tab of await panel.getByRole('tab').all()) {
      await tab.click()
      shown += (await panel.locator('pre').allTextContents()).join('\n') + '\n'
    }
    expect(shown).not.toContain('127.0.0.1:8787')
    const missing: string[] = []
    const rows = tableRows()
    expect(rows.length).toBeGreaterThan(10)
    for (const { agent, lines } of rows) {
      for (const raw of lines) {
        const line = raw.replaceAll(DEFAULT, t.url)
        // An SDK's constructor (`new OpenAI({ baseURL: '…' })`): the panel's names more options.
        const sdk = line.match(/^(new \w+\(\{)\s*(baseURL: '[^']+')/)
        const found = sdk ? squeeze(shown).includes(squeeze(sdk[1])) && shown.includes(sdk[2]) : squeeze(shown).includes(squeeze(line))
        if (!found) missing.push(`${agent}: ${line}`)
      }
    }
    expect(missing).toEqual([])
    await page.context().close()
  })
})
