import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { _electron as electron } from 'playwright'
import { describe, expect, it } from 'vitest'
import { request } from '../support/http'

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..')

/**
 * The Electron binary, if it was downloaded. Not `require('electron')`: that tries to download
 * a missing binary, and these machines cannot reach Electron's host.
 */
function electronBinary(): string | null {
  const pkg = join(ROOT, 'node_modules', 'electron')
  const pathTxt = join(pkg, 'path.txt')
  const override = process.env.ELECTRON_OVERRIDE_DIST_PATH
  if (!existsSync(pathTxt)) return override && existsSync(join(override, 'electron')) ? join(override, 'electron') : null
  const rel = readFileSync(pathTxt, 'utf8').trim()
  const full = override ? join(override, rel) : join(pkg, 'dist', rel)
  return existsSync(full) ? full : null
}

describe('the packaged-style app under real Electron (smoke)', () => {
  it('opens the dashboard window from its own server and shows today in the tray', async (ctx) => {
    const bin = electronBinary()
    if (!bin) ctx.skip('Electron binary missing (ELECTRON_SKIP_BINARY_DOWNLOAD): run `npx install-electron` to enable this smoke test')
    if (!existsSync(join(ROOT, 'out/main/index.js'))) ctx.skip('out/main/index.js missing: run `npm run build` first')

    const dir = mkdtempSync(join(tmpdir(), 'burnrate-electron-'))
    writeFileSync(join(dir, 'config.yaml'), 'server:\n  host: 127.0.0.1\n  port: 0\ntimezone: UTC\n')
    const app = await electron.launch({
      executablePath: bin!,
      args: [ROOT, `--user-data-dir=${dir}`],
      cwd: ROOT,
      env: { ...process.env, BURNRATE_DATA_DIR: dir, BURNRATE_CONFIG: join(dir, 'config.yaml') },
      timeout: 60_000,
    })
    try {
      const page = await app.firstWindow()
      await page.waitForLoadState('domcontentloaded')
      const url = new URL(page.url())
      expect(url.hostname).toBe('127.0.0.1')
      expect((await request(`${url.origin}/api/health`)).json().status).toBe('ok')
      await expect.poll(() => page.title()).toMatch(/Burnrate/)

      const tray = await app.evaluate(() => {
        const d = (globalThis as any).burnrateDesktop
        return { tooltip: d?.presenter.view?.tooltip, headline: d?.presenter.view?.headline, tray: Boolean(d && !d.tray.tray.isDestroyed()) }
      })
      expect(tray).toEqual({ tooltip: 'Burnrate: $0.00 today', headline: 'Today: $0.00', tray: true })

      // No Node in the page (nodeIntegration off, contextIsolation on, no preload).
      const globals = await page.evaluate(() => [typeof (globalThis as any).require, typeof (globalThis as any).process, typeof (globalThis as any).module])
      expect(globals).toEqual(['undefined', 'undefined', 'undefined'])
    } finally {
      await app.evaluate(({ app: a }) => a.quit()).catch(() => {})
      await app.close().catch(() => {})
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
