import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it, vi } from 'vitest'
import { stringify } from 'yaml'
import { silentLogger } from '../../src/main/log'
import { loginFromLink } from '../support/dashboard-login'
import { request } from '../support/http'
import { appEachTest } from './app-each-test'
import { state } from './fake-electron'

vi.mock('electron', () => import('./fake-electron'))

const { runDesktop } = await import('../../src/main/desktop/app')

/**
 * "Open in browser" with dashboard.token set: the address goes on the command line that starts the
 * browser (`xdg-open <url>`, the browser's own), which every user of the machine can read in `ps`
 * for as long as that browser runs. It must log the browser in without holding the token, nor the
 * one-time code another user could read there and use first: the browser is handed a private page
 * (../../src/main/desktop-logic/browser-login.ts) that sends it on with the code.
 */
/** The address the page handed to the browser sends it on to. */
const sentOnTo = (opened: string): string => {
  const html = readFileSync(fileURLToPath(opened), 'utf8')
  return /content="0;url=([^"]+)"/.exec(html)![1].replace(/&amp;/g, '&')
}
const TOKEN = 'dash-token-browser-link-0123456789'
const fake = appEachTest('burnrate-browser-link-')

describe('Open in browser with dashboard.token', () => {
  it('opens a one-time login link, not the token, and each opening has its own', async () => {
    writeFileSync(join(fake.dir, 'config.yaml'), stringify({ server: { host: '127.0.0.1', port: 0 }, timezone: 'UTC', dashboard: { token: TOKEN } }))
    const d = await runDesktop({ argv: ['burnrate'], env: { XDG_CONFIG_HOME: join(fake.dir, 'xdg') }, platform: 'linux', log: silentLogger, signals: false, home: join(fake.dir, 'home') })
    if (!d) throw new Error(`desktop did not start: ${JSON.stringify(state.errorBoxes)}`)
    const tray = state.trays[0]
    tray.menu!.click('Open in browser')
    tray.menu!.click('Open in browser')
    for (const opened of state.openedExternal) expect(opened).not.toMatch(/login=|token=/)
    const [first, second] = state.openedExternal.map(sentOnTo)
    // The code in the fragment, which the login page posts: no request line (nor access log) holds it.
    expect(first).toMatch(new RegExp(`^${d.url}/login#login=[\\w-]{43}$`))
    expect(first).not.toContain(TOKEN)
    expect(second).not.toBe(first)
    const login = await loginFromLink(first)
    expect(login.status).toBe(303)
    const cookie = String(login.headers['set-cookie']).split(';')[0]
    expect((await request(`${d.url}/api/dashboard/summary`, { headers: { cookie } })).status).toBe(200)
    // Used again, it opens nothing.
    expect((await loginFromLink(first)).status).toBe(401)
    expect((await loginFromLink(second)).status).toBe(303)
  }, 60_000)
})

describe('login pages a quit left behind', () => {
  it('are removed when the app starts next', async () => {
    writeFileSync(join(fake.dir, 'config.yaml'), stringify({ server: { host: '127.0.0.1', port: 0 }, timezone: 'UTC', dashboard: { token: TOKEN } }))
    // Quit within the minute after *Open in browser* (attached to a headless Burnrate, its token in it).
    const left = join(fake.dir, 'dashboard-login-AbCdEfGhIjKl.html')
    writeFileSync(left, `<meta http-equiv="refresh" content="0;url=http://127.0.0.1:8787/?token=${TOKEN}">`, { mode: 0o600 })
    const d = await runDesktop({ argv: ['burnrate'], env: { XDG_CONFIG_HOME: join(fake.dir, 'xdg') }, platform: 'linux', log: silentLogger, signals: false, home: join(fake.dir, 'home') })
    if (!d) throw new Error(`desktop did not start: ${JSON.stringify(state.errorBoxes)}`)
    expect(existsSync(left)).toBe(false)
  }, 60_000)
})
