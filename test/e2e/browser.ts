import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { type Browser, type Page, chromium } from 'playwright'

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
export const ARTIFACTS = join(ROOT, 'test/artifacts')
export const CHROMIUM = process.env.BURNRATE_CHROMIUM || '/usr/bin/chromium'

/** Null when Chromium is there; otherwise why the browser tests are skipped (`apt-get install chromium`, or set BURNRATE_CHROMIUM). */
export const NO_BROWSER: string | null = existsSync(CHROMIUM)
  ? null
  : `dashboard browser tests skipped: no Chromium at ${CHROMIUM} (install Debian's chromium, or set BURNRATE_CHROMIUM to a Chromium binary)`
if (NO_BROWSER) console.warn(NO_BROWSER)

/** Builds the dashboard when out/renderer is missing (`npm test` builds it first anyway). */
export function ensureRendererBuilt(): void {
  if (existsSync(join(ROOT, 'out/renderer/index.html'))) return
  execFileSync(join(ROOT, 'node_modules/.bin/electron-vite'), ['build'], { cwd: ROOT, stdio: 'inherit' })
}

/** Debian's Chromium, driven by playwright (no downloaded browser). */
export async function launchChromium(): Promise<Browser> {
  mkdirSync(ARTIFACTS, { recursive: true })
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  })
}

/** Makes the servers this file starts serve the built dashboard (out/renderer); returns what undoes it, for afterAll. */
export function serveBuiltRenderer(): () => void {
  ensureRendererBuilt()
  process.env.BURNRATE_RENDERER_DIR = join(ROOT, 'out/renderer')
  return () => {
    delete process.env.BURNRATE_RENDERER_DIR
  }
}

/** A new page of `browser` in a desktop-sized window (1440 x 900), opened at `url`. */
export async function openPage(browser: Browser, url: string): Promise<Page> {
  const page = await (await browser.newContext({ viewport: { width: 1440, height: 900 } })).newPage()
  await page.goto(url)
  return page
}

/** Unlocks the Budget rules panel (the admin API) of `page` with `token`. */
export async function unlockAdmin(page: Page, token: string): Promise<void> {
  const rules = page.locator('#rules')
  await rules.getByTestId('admin-token').fill(token)
  await rules.getByRole('button', { name: 'Unlock' }).click()
}
