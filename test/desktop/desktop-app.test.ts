import { spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import Database from 'better-sqlite3'
import { afterEach, beforeAll, afterAll, beforeEach, describe, expect, it, vi } from 'vitest'
import { stringify } from 'yaml'
import { formatUsd } from '../../src/main/desktop-logic/money'
import { callRecord } from '../../src/main/desktop-logic/test-helpers'
import { silentLogger } from '../../src/main/log'
import { PROVIDER_NAMES } from '../../src/main/providers/registry'
import { fixture } from '../support/fixtures'
import { loginFromLink } from '../support/dashboard-login'
import { eventually, postJson, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { baseUrlFor, startTestServer } from '../support/server'
import { PLAIN_HOST, startConnectProxy } from '../network/support'
import { type FakeBrowserWindow, type FakeTray, app, resetElectron, state } from './fake-electron'

vi.mock('electron', () => import('./fake-electron'))

const { runDesktop } = await import('../../src/main/desktop/app')
type Desktop = NonNullable<Awaited<ReturnType<typeof runDesktop>>>

const KEY = 'sk-desk-0123456789abcdef'
const KEY_HASH = createHash('sha256').update(KEY).digest('hex')

let upstream: MockUpstream
let dir: string
let running: Desktop | null = null
const cleanups: (() => Promise<unknown> | unknown)[] = []

beforeAll(async () => {
  upstream = await startMockUpstream()
})
afterAll(async () => {
  await upstream.close()
})
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'burnrate-desktop-'))
  resetElectron(dir)
})
afterEach(async () => {
  if (running && !state.exited) {
    app.quit()
    await eventually(() => state.exited)
  }
  running = null
  for (const c of cleanups.splice(0).reverse()) await c()
  rmSync(dir, { recursive: true, force: true })
})

/** Writes `config.yaml` into the fake userData, with every provider pointed at the mock upstream. */
function writeConfig(extra: Record<string, unknown> = {}, port = 0): void {
  const providers: Record<string, unknown> = {}
  for (const name of PROVIDER_NAMES) providers[name] = { base_url: baseUrlFor(name, upstream.url) }
  writeFileSync(join(dir, 'config.yaml'), stringify({ server: { host: '127.0.0.1', port }, providers, timezone: 'UTC', ...extra }))
}

async function launch(opts: { argv?: string[]; platform?: NodeJS.Platform } = {}): Promise<Desktop> {
  const d = await runDesktop({
    argv: opts.argv ?? ['burnrate'],
    env: { XDG_CONFIG_HOME: join(dir, 'xdg') },
    platform: opts.platform ?? 'linux',
    log: silentLogger,
    signals: false,
    // Agents are looked for (and connected) in a home folder of the test's own.
    home: join(dir, 'home'),
  })
  if (!d) throw new Error(`desktop did not start: ${JSON.stringify(state.errorBoxes)}`)
  running = d
  return d
}

const win = (): FakeBrowserWindow => state.windows[0]
const tray = (): FakeTray => state.trays[0]
const menuLabels = () => tray().menu!.items.map((i: any) => (i.type === 'separator' ? '---' : i.label))

function dbSpend(): number {
  const db = new Database(join(dir, 'burnrate.db'), { readonly: true })
  try {
    return (db.prepare('SELECT COALESCE(SUM(cost_usd), 0) AS s FROM calls').get() as { s: number }).s
  } finally {
    db.close()
  }
}

async function quit(): Promise<void> {
  app.quit()
  await eventually(() => state.exited)
}

describe('the desktop app over the real server core', () => {
  it('starts the server with its data in userData and loads its URL in a locked-down window', async () => {
    writeConfig()
    const d = await launch()
    expect(d.server).not.toBeNull()
    expect(d.attachedTo).toBeNull()
    expect(d.config.data_dir).toBe(dir)
    expect(existsSync(join(dir, 'burnrate.db'))).toBe(true)
    const health = await request(`${d.url}/api/health`)
    expect(health.status).toBe(200)
    expect(health.json().status).toBe('ok')

    expect(state.windows).toHaveLength(1)
    // The window gets an admin token for this run in the fragment (the config has no admin API), and it works.
    expect(win().loadedUrls).toEqual([expect.stringMatching(new RegExp(`^${d.url}#admin_token=[\\w-]{43}$`))])
    const adminToken = decodeURIComponent(win().loadedUrls[0].split('#admin_token=')[1])
    expect((await request(`${d.url}/api/admin/agents`, { headers: { authorization: `Bearer ${adminToken}` } })).status).toBe(200)
    expect((await request(`${d.url}/api/admin/agents`)).status).toBe(401)
    expect(win().options.webPreferences).toMatchObject({ contextIsolation: true, sandbox: true, nodeIntegration: false, webSecurity: true })
    await eventually(() => win().visible)
  })

  it("keeps its data where the config's data_dir says, as `burnrate serve` does with the same config (one ledger, one set of budget meters)", async () => {
    const elsewhere = join(dir, 'elsewhere')
    writeConfig({ data_dir: elsewhere })
    const d = await launch()
    expect(d.config.data_dir).toBe(elsewhere)
    expect(d.config.source).toBe(join(dir, 'config.yaml'))
    expect(existsSync(join(elsewhere, 'burnrate.db'))).toBe(true)
    expect(existsSync(join(dir, 'burnrate.db'))).toBe(false)
    // The command line's reading of the same config (its default folder is the desktop's userData).
    const { loadConfig } = await import('../../src/main/config/load')
    expect(loadConfig({ defaultDataDir: dir }, {}).data_dir).toBe(elsewhere)
  })

  it("shows today's spend in the tray and updates it after calls through the proxy", async () => {
    writeConfig()
    const d = await launch()
    expect(tray().tooltip).toBe('Burnrate: $0.00 today')
    expect(tray().menu!.items[0]).toMatchObject({ label: 'Today: $0.00', enabled: false })
    expect(tray().title).toBe('') // Linux: no title beside the icon

    upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('anthropic/messages-nonstream-basic.json') }))
    const res = await postJson(`${d.url}/v1/messages`, { model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] }, {
      'x-api-key': 'sk-ant-desktop-test-key-1',
      'anthropic-version': '2023-06-01',
    })
    expect(res.status).toBe(200)
    // 8,000 calls' worth recorded at once, as a burst of agents would
    for (let i = 0; i < 8000; i++) d.server!.ledger.record(callRecord({ cost_usd: 0.000_25 }))
    d.server!.ledger.flush()
    const total = dbSpend()
    expect(total).toBeGreaterThan(2)
    await eventually(() => tray().tooltip.split('\n')[0] === `Burnrate: ${formatUsd(total)} today`)
    // The forecast: today's spend at its pace, to midnight in the configured zone.
    expect(tray().tooltip.split('\n')[1]).toMatch(/^On pace for \$[\d,.]+ by midnight$/)
    expect(tray().menu!.items[0]).toMatchObject({ label: `Today: ${formatUsd(total)}`, enabled: false })
  })

  it("on a machine whose proxy is in the system's settings (no HTTPS_PROXY: started from the Dock), the calls go through it", async () => {
    const proxy = await startConnectProxy()
    cleanups.push(() => proxy.close())
    const port = new URL(upstream.url).port
    // Anthropic at a name only the proxy resolves; the system's settings (a PAC file) send it there.
    writeConfig({ providers: { anthropic: { base_url: `http://${PLAIN_HOST}:${port}` } } })
    const asked: string[] = []
    state.systemProxy = (url) => {
      asked.push(url)
      return url.includes(PLAIN_HOST) ? `PROXY 127.0.0.1:${proxy.port}; DIRECT` : 'DIRECT'
    }
    const d = await launch()
    expect(asked).toContain(`http://${PLAIN_HOST}:${port}`)
    upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('anthropic/messages-nonstream-basic.json') }))
    const res = await postJson(`${d.url}/v1/messages`, { model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] }, {
      'x-api-key': 'sk-ant-desktop-test-key-1',
      'anthropic-version': '2023-06-01',
    })
    expect(res.status).toBe(200)
    // An http:// upstream: sent to the proxy as an ordinary request for its URI, not tunnelled.
    expect(proxy.forwarded).toEqual([`${PLAIN_HOST}:${port}`])
    expect(proxy.targets).toEqual([])
  })

  it('macOS: the spend is the menu-bar title, in monospaced digits, beside a template icon', async () => {
    writeConfig()
    const d = await launch({ platform: 'darwin' })
    expect(tray().title).toBe('$0.00')
    expect(tray().titleOptions).toEqual({ fontType: 'monospacedDigit' })
    expect(tray().image.template).toBe(true)
    d.server!.ledger.record(callRecord({ cost_usd: 12.5 }))
    await eventually(() => tray().title === '$12.50')
  })

  it('Windows: notifications get the app model id, and a click on the tray icon opens the dashboard', async () => {
    writeConfig()
    await launch({ platform: 'win32' })
    expect((app as any).appUserModelId).toBe('dev.burnrate.app')
    expect(tray().title).toBe('')
    win().hide()
    tray().emit('click')
    expect(win().visible).toBe(true)
  })

  it('changes the tray icon and notifies once when a budget rule warns and when it blocks', async () => {
    writeConfig({ budgets: { rules: [{ api_key_pattern: KEY, daily_limit_usd: 1, action: 'block', soft_limit_pct: 0.5 }] } })
    const d = await launch()
    expect(tray().image.path).toMatch(/tray-ok\.png$/)
    d.server!.ledger.record(callRecord({ api_key_hash: KEY_HASH, cost_usd: 0.6 }))
    await eventually(() => /tray-warning\.png$/.test(tray().image.path))
    expect(state.notifications).toHaveLength(1)
    // A rule on a whole key is named by the key's hint, never the key itself (tray, notifications, notices.json).
    const hint = 'sk-…cdef'
    expect(state.notifications[0].options).toMatchObject({ title: `Budget warning: ${hint}`, urgency: 'normal' })
    expect(state.notifications[0].shown).toBe(true)
    win().hide()
    state.notifications[0].emit('click')
    expect(win().visible).toBe(true)
    expect(menuLabels()[1]).toBe(`Warning: ${hint} daily $0.60 of $1.00`)

    d.server!.ledger.record(callRecord({ api_key_hash: KEY_HASH, cost_usd: 0.1 }))
    d.server!.ledger.record(callRecord({ api_key_hash: KEY_HASH, cost_usd: 0.5 }))
    await eventually(() => /tray-blocking\.png$/.test(tray().image.path))
    d.server!.ledger.record(callRecord({ api_key_hash: KEY_HASH, cost_usd: 0.5 }))
    expect(state.notifications.map((n) => n.options.urgency)).toEqual(['normal', 'critical'])
    expect(state.notifications[1].options.title).toBe(`Budget reached: ${hint}`)

    // the same alerts after a restart do not notify again
    await quit()
    resetElectron(dir)
    await launch()
    expect(/tray-blocking\.png$/.test(tray().image.path)).toBe(true)
    expect(state.notifications).toHaveLength(0)
  })

  it('a raised limit is told again when it is reached, the same day, as its webhooks are', async () => {
    writeConfig({ budgets: { rules: [{ api_key_pattern: KEY, daily_limit_usd: 1, action: 'block', alert_at_pct: [0.5, 1] }] } })
    const d = await launch()
    const hint = 'sk-…cdef'
    d.server!.ledger.record(callRecord({ api_key_hash: KEY_HASH, cost_usd: 0.6 }))
    await eventually(() => state.notifications.length === 1)
    d.server!.ledger.record(callRecord({ api_key_hash: KEY_HASH, cost_usd: 0.4 }))
    await eventually(() => state.notifications.length === 2)
    expect(state.notifications.map((n) => n.options.title)).toEqual([`Budget at 50%: ${hint}`, `Budget reached: ${hint}`])

    // The limit raised to $10 for today (a runtime rule replaces the config's), then reached too.
    const adminToken = decodeURIComponent(win().loadedUrls[0].split('#admin_token=')[1])
    const res = await postJson(`${d.url}/api/admin/budgets/rules`, { api_key_pattern: KEY, daily_limit_usd: 10, action: 'block', alert_at_pct: [0.5, 1] }, { authorization: `Bearer ${adminToken}` })
    expect(res.status).toBe(201)
    await eventually(() => d.server!.context.budgets!.alerts().length === 0)
    d.server!.ledger.record(callRecord({ api_key_hash: KEY_HASH, cost_usd: 5 }))
    await eventually(() => menuLabels().some((l: string) => l.includes('$6.00')))
    d.server!.ledger.record(callRecord({ api_key_hash: KEY_HASH, cost_usd: 4 }))
    await eventually(() => tray().image.path.endsWith('tray-blocking.png'))
    await eventually(() => state.notifications.length === 4)
    expect(state.notifications.slice(2).map((n) => [n.options.title, n.options.body])).toEqual([
      [`Budget at 50%: ${hint}`, expect.stringContaining('of its $10.00 daily limit')],
      [`Budget reached: ${hint}`, expect.stringContaining('reached its $10.00 daily limit')],
    ])
  })

  it('notifies once when an agent session is stuck in a loop, naming the agent and session; a click opens the dashboard', async () => {
    // Claude Code's real request shape, retrying one failing command: the conversation grows, its tail stays the same.
    const capture = JSON.parse(readFileSync(join(dirname(fileURLToPath(import.meta.url)), '../agents/captures/claude-code-2.1.json'), 'utf8'))
    const session = '55555555-1c4f-4a8e-b6d5-3f2e1a0c9b8d'
    const stuck = (n: number) => {
      const messages: unknown[] = [capture.body.messages[0]]
      for (let i = 0; i <= n; i++) {
        messages.push({ role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_same', name: 'Bash', input: { command: 'npm test' } }] })
        messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_same', content: 'Error: Cannot find module' }] })
      }
      const user_id = JSON.stringify({ device_id: 'd'.repeat(64), account_uuid: '', session_id: session })
      return JSON.stringify({ ...capture.body, messages, metadata: { user_id } })
    }
    upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, body: fixture('anthropic/messages-stream-text.sse') }))
    writeConfig({ runaway: { loop: { action: 'warn', repeats: 3, window_minutes: 10 } } })
    const d = await launch()
    const send = (n: number) =>
      request(`${d.url}${capture.path}`, { method: 'POST', headers: { ...capture.headers, 'x-api-key': 'sk-ant-api03-desk-loop-0001' }, body: stuck(n) })
    for (let i = 0; i < 2; i++) expect((await send(i)).status).toBe(200)
    expect(state.notifications).toHaveLength(0)
    const tripped = await send(2)
    expect(tripped.status).toBe(200)
    expect(tripped.headers['x-burnrate-runaway-warning']).toMatch(/^loop: /)
    await eventually(() => state.notifications.length > 0)
    // The loop goes on: still one notification.
    for (let i = 3; i < 6; i++) expect((await send(i)).status).toBe(200)
    expect(state.notifications).toHaveLength(1)
    const n = state.notifications[0]
    expect(n.options).toMatchObject({ title: 'Agent stuck in a loop: claude-code', urgency: 'normal' })
    expect(n.options.body).toBe(
      `claude-code (session 55555555…) sent the same ${capture.body.model} conversation tail 3 times in 10 minutes. Its calls still go through: stop the agent, or give it a new instruction.`,
    )
    expect(n.shown).toBe(true)
    win().hide()
    n.emit('click')
    expect(win().visible).toBe(true)
  })

  it('the tray menu opens the dashboard, opens the browser, copies the agent setup and toggles start at login', async () => {
    writeConfig()
    const d = await launch()
    expect(menuLabels()).toEqual([
      'Today: $0.00',
      '---',
      'Open dashboard',
      'Open in browser',
      'Copy agent setup',
      '---',
      'Connect agents',
      'SDK scripts (shell profile)',
      '---',
      'Start at login',
      '---',
      'Quit Burnrate',
    ])
    win().hide()
    tray().menu!.click('Open dashboard')
    expect(win().visible).toBe(true)
    expect(win().focused).toBe(true)

    tray().menu!.click('Open in browser')
    expect(state.openedExternal).toEqual([d.url])

    tray().menu!.click('Copy agent setup')
    expect(state.clipboard).toContain(`export OPENAI_BASE_URL=${d.url}/openai/v1\n`)
    expect(state.clipboard).toContain(`export ANTHROPIC_BASE_URL=${d.url}/anthropic\n`)
    expect(state.clipboard).toContain(`export CODE_ASSIST_ENDPOINT=${d.url}/code-assist\n`)
    expect(state.clipboard).toContain(`export ANTHROPIC_VERTEX_BASE_URL=${d.url}/vertex/v1\n`)

    const autostart = join(dir, 'xdg', 'autostart', 'burnrate.desktop')
    expect(tray().menu!.items.find((i: any) => i.label === 'Start at login')).toMatchObject({ type: 'checkbox', checked: false })
    tray().menu!.click('Start at login')
    expect(readFileSync(autostart, 'utf8')).toContain('--hidden')
    expect(tray().menu!.items.find((i: any) => i.label === 'Start at login')).toMatchObject({ checked: true })
    tray().menu!.click('Start at login')
    expect(existsSync(autostart)).toBe(false)

    tray().menu!.click('Quit Burnrate')
    await eventually(() => state.exited)
  })

  it('closing the window hides it to the tray; a second launch brings it back', async () => {
    writeConfig()
    await launch()
    await eventually(() => win().visible)
    win().close()
    expect(state.windows).toHaveLength(1)
    expect(win().visible).toBe(false)
    expect(state.exited).toBe(false)
    app.emit('second-instance', {}, ['burnrate'], '/')
    expect(win().visible).toBe(true)
    expect(win().focused).toBe(true)
  })

  it('a second instance quits at once', async () => {
    state.singleInstance = false
    expect(await runDesktop({ env: {}, log: silentLogger, signals: false })).toBeNull()
    expect(state.quitCalls).toBe(1)
    expect(state.windows).toHaveLength(0)
  })

  it('a second launch while it is still starting (hidden at login, asking about the port) opens the window once started', async () => {
    const other = http.createServer((_req, res) => res.end('not burnrate'))
    await new Promise<void>((r) => other.listen(0, '127.0.0.1', r))
    cleanups.push(() => new Promise((r) => other.close(r)))
    writeConfig({}, (other.address() as AddressInfo).port)
    const { dialog } = await import('./fake-electron')
    const ask = dialog.showMessageBox
    cleanups.push(() => (dialog.showMessageBox = ask))
    // The person launches Burnrate again while the port question is up.
    dialog.showMessageBox = (options: any) => {
      app.emit('second-instance', {}, ['burnrate'], '/')
      return ask(options)
    }
    state.messageBoxResponse = 0
    await launch({ argv: ['burnrate', '--hidden'] })
    expect(state.messageBoxes).toHaveLength(1)
    await eventually(() => win().visible)
  })

  it('sends navigation and new windows outside the dashboard to the system browser', async () => {
    writeConfig()
    const d = await launch()
    const wc = win().webContents
    expect(wc.navigate(`${d.url}/?range=7d`)).toBe(true)
    expect(wc.navigate('https://docs.anthropic.com/en/api')).toBe(false)
    expect(wc.navigate('file:///etc/passwd')).toBe(false)
    expect(wc.openHandler!({ url: 'https://openai.com/pricing' })).toEqual({ action: 'deny' })
    expect(wc.openHandler!({ url: 'javascript:alert(1)' })).toEqual({ action: 'deny' })
    expect(wc.openHandler!({ url: `${d.url}/api/dashboard/export?format=csv` })).toEqual({ action: 'allow' })
    expect(state.openedExternal).toEqual(['https://docs.anthropic.com/en/api', 'https://openai.com/pricing'])
    const asked: [string, boolean][] = []
    for (const p of ['media', 'geolocation', 'notifications', 'clipboard-sanitized-write']) wc.session.permissionHandler!(wc, p, (ok) => asked.push([p, ok]))
    expect(asked).toEqual([['media', false], ['geolocation', false], ['notifications', false], ['clipboard-sanitized-write', true]])
  })

  it('quitting finishes, flushes the ledger to disk and stops the server', async () => {
    writeConfig()
    const d = await launch()
    for (let i = 0; i < 25; i++) d.server!.ledger.record(callRecord({ cost_usd: 0.04 }))
    expect(d.server!.ledger.status.pending).toBe(25)
    await quit()
    const db = new Database(join(dir, 'burnrate.db'), { readonly: true })
    expect((db.prepare('SELECT COUNT(*) AS n FROM calls').get() as { n: number }).n).toBe(25)
    db.close()
    await expect(request(`${d.url}/api/health`)).rejects.toThrow(/ECONNREFUSED/)
    expect(tray().destroyed).toBe(true)
  })

  it('remembers the window size and position', async () => {
    writeConfig()
    await launch()
    win().setBounds({ x: 210, y: 140, width: 1100, height: 777 })
    await quit()
    expect(JSON.parse(readFileSync(join(dir, 'window-state.json'), 'utf8'))).toEqual({ x: 210, y: 140, width: 1100, height: 777, maximized: false })
    resetElectron(dir)
    await launch()
    expect(win().options).toMatchObject({ x: 210, y: 140, width: 1100, height: 777 })
  })

  it('started hidden at login, it stays in the tray', async () => {
    writeConfig()
    await launch({ argv: ['burnrate', '--hidden'] })
    await new Promise((r) => setImmediate(r))
    expect(win().loadedUrls).toHaveLength(1)
    expect(win().visible).toBe(false)
    expect(tray().tooltip).toBe('Burnrate: $0.00 today')
  })

  it('a config error is said in a dialog and the app quits', async () => {
    writeFileSync(join(dir, 'config.yaml'), 'servr:\n  port: 1\n')
    expect(await runDesktop({ env: {}, log: silentLogger, signals: false })).toBeNull()
    expect(state.errorBoxes).toHaveLength(1)
    expect(state.errorBoxes[0].content).toContain('unknown key "servr"')
    expect(state.quitCalls).toBe(1)
  })
})

describe('when the port is already taken', () => {
  it('attaches to a headless Burnrate on it: the window loads that server and the tray reads its spend', async () => {
    const headless = await startTestServer({ timezone: 'UTC' }, upstream.url)
    cleanups.push(() => headless.cleanup())
    headless.server.ledger.record(callRecord({ cost_usd: 3.21 }))
    headless.server.ledger.flush()
    writeConfig({}, Number(new URL(headless.url).port))

    const d = await launch()
    expect(d.attachedTo).toBe(headless.url)
    expect(d.server).toBeNull()
    expect(existsSync(join(dir, 'burnrate.db'))).toBe(false)
    expect(win().loadedUrls).toEqual([headless.url])
    await eventually(() => tray().tooltip.split('\n')[0] === 'Burnrate: $3.21 today')
    expect(menuLabels().slice(0, 2)).toEqual(['Today: $3.21', `Attached to the Burnrate at ${headless.url}`])

    headless.server.ledger.record(callRecord({ cost_usd: 1 }))
    headless.server.ledger.flush()
    await eventually(() => tray().tooltip.split('\n')[0] === 'Burnrate: $4.21 today')

    // quitting the app leaves the headless server running
    await quit()
    expect((await request(`${headless.url}/api/health`)).status).toBe(200)
  })

  it('attached with dashboard.token: the window opens with the token and the tray sends it', async () => {
    const headless = await startTestServer({ timezone: 'UTC', dashboard: { token: 'dash-token-0123456789' } }, upstream.url)
    cleanups.push(() => headless.cleanup())
    headless.server.ledger.record(callRecord({ cost_usd: 7 }))
    headless.server.ledger.flush()
    expect((await request(`${headless.url}/api/dashboard/summary`)).status).toBe(401)
    writeConfig({ dashboard: { token: 'dash-token-0123456789' } }, Number(new URL(headless.url).port))

    const d = await launch()
    expect(d.attachedTo).toBe(headless.url)
    // The token in the fragment, which the login page posts: no request line holds it.
    expect(win().loadedUrls).toEqual([`${headless.url}/login#token=dash-token-0123456789`])
    const first = await loginFromLink(win().loadedUrls[0])
    expect(first.status).toBe(303)
    expect(String(first.headers['set-cookie'])).toContain('HttpOnly')
    await eventually(() => tray().tooltip.split('\n')[0] === 'Burnrate: $7.00 today')
    tray().menu!.click('Open in browser')
    // Not on the browser's command line, which other users read in `ps`: a private page that sends it on.
    expect(state.openedExternal).toHaveLength(1)
    expect(state.openedExternal[0]).toMatch(/^file:\/\//)
    expect(state.openedExternal[0]).not.toContain('dash-token')
    expect(readFileSync(fileURLToPath(state.openedExternal[0]), 'utf8')).toContain(`url=${headless.url}/login#token=dash-token-0123456789`)
  })

  it('attached to a headless Burnrate whose budget rule warns, then blocks: the icon turns amber then red, with one notification per crossing', async () => {
    const rules = { budgets: { rules: [{ api_key_pattern: KEY, daily_limit_usd: 1, action: 'block', soft_limit_pct: 0.5 }] } }
    const headless = await startTestServer({ timezone: 'UTC', ...rules }, upstream.url)
    cleanups.push(() => headless.cleanup())
    headless.server.ledger.record(callRecord({ api_key_hash: KEY_HASH, cost_usd: 0.6 }))
    headless.server.ledger.flush()
    writeConfig(rules, Number(new URL(headless.url).port))
    const hint = 'sk-…cdef' // the dashboard API names a whole-key rule by its hint

    const d = await launch()
    expect(d.attachedTo).toBe(headless.url)
    // Already at the warning level when the app attaches: amber, and told once.
    await eventually(() => tray().image.path.endsWith('tray-warning.png'))
    expect(menuLabels()).toContain(`Warning: ${hint} daily $0.60 of $1.00`)
    await eventually(() => state.notifications.length === 1)
    expect(state.notifications[0].options).toMatchObject({ title: `Budget warning: ${hint}` })

    // 85%: the 80% threshold is crossed.
    headless.server.ledger.record(callRecord({ api_key_hash: KEY_HASH, cost_usd: 0.25 }))
    headless.server.ledger.flush()
    await eventually(() => state.notifications.length === 2)
    expect(state.notifications[1].options).toMatchObject({ title: `Budget at 80%: ${hint}` })

    // Over the limit: the headless server refuses the key's calls, the icon turns red.
    headless.server.ledger.record(callRecord({ api_key_hash: KEY_HASH, cost_usd: 0.65 }))
    headless.server.ledger.flush()
    const res = await postJson(`${headless.url}/v1/messages`, { model: 'claude-sonnet-4-5', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }, { 'x-api-key': KEY, 'anthropic-version': '2023-06-01' })
    expect(res.status).toBe(429)
    await eventually(() => tray().image.path.endsWith('tray-blocking.png'))
    expect(menuLabels()).toContain(`Blocking: ${hint} daily $1.50 of $1.00`)
    await eventually(() => state.notifications.some((n) => n.options.title === `Budget reached: ${hint}`))
    // (the 90% threshold, crossed by the same spend, is not told once the limit is: as with its own server)
    expect(state.notifications.map((n) => n.options.title)).toEqual([`Budget warning: ${hint}`, `Budget at 80%: ${hint}`, `Budget reached: ${hint}`])

    // Later readings at the same level tell nothing again: another call's spend shows, no new notification.
    headless.server.ledger.record(callRecord({ api_key_hash: KEY_HASH, cost_usd: 0.1 }))
    headless.server.ledger.flush()
    await eventually(() => menuLabels().includes(`Blocking: ${hint} daily $1.60 of $1.00`))
    expect(state.notifications).toHaveLength(3)
  })

  it('attached to a Burnrate that wants a dashboard token the app lacks: the tray says the token is refused, not that the server is down', async () => {
    const headless = await startTestServer({ timezone: 'UTC', dashboard: { token: 'dash-token-0123456789' } }, upstream.url)
    cleanups.push(() => headless.cleanup())
    headless.server.ledger.record(callRecord({ cost_usd: 2 }))
    headless.server.ledger.flush()
    writeConfig({}, Number(new URL(headless.url).port)) // no dashboard.token in the app's config

    const d = await launch()
    expect(d.attachedTo).toBe(headless.url)
    await eventually(() => tray().tooltip === 'Burnrate: the server answers but refuses the dashboard token (dashboard.token in config.yaml)')
    expect(menuLabels()[0]).toBe('Today: — (dashboard token refused)')
  })

  it('another program on the port: says so and offers the next free port', async () => {
    const other = http.createServer((_req, res) => res.end('not burnrate'))
    await new Promise<void>((r) => other.listen(0, '127.0.0.1', r))
    cleanups.push(() => new Promise((r) => other.close(r)))
    const port = (other.address() as AddressInfo).port
    writeConfig({}, port)

    state.messageBoxResponse = 0
    const d = await launch()
    expect(state.messageBoxes).toHaveLength(1)
    expect(state.messageBoxes[0].message).toBe(`Port ${port} is in use by another program`)
    const offered = Number(/Use port (\d+)/.exec(state.messageBoxes[0].buttons[0])![1])
    expect(offered).toBeGreaterThan(port)
    expect(d.url).toBe(`http://127.0.0.1:${offered}`)
    expect(d.server).not.toBeNull()
    expect(win().loadedUrls[0].split('#')[0]).toBe(d.url)
  })

  it('another program on the port, offer declined: quits without starting', async () => {
    const other = http.createServer((_req, res) => res.end('not burnrate'))
    await new Promise<void>((r) => other.listen(0, '127.0.0.1', r))
    cleanups.push(() => new Promise((r) => other.close(r)))
    writeConfig({}, (other.address() as AddressInfo).port)
    state.messageBoxResponse = 1
    expect(await runDesktop({ env: {}, log: silentLogger, signals: false })).toBeNull()
    expect(state.quitCalls).toBe(1)
    expect(state.windows).toHaveLength(0)
    expect(state.trays).toHaveLength(0)
  })
})

describe('connecting agents from the tray, and never stranding them', () => {
  const settings = () => join(dir, 'home', '.claude', 'settings.json')
  const ORIGINAL = '{\n  // mine\n  "model": "opus"\n}\n'
  function claudeInstalled(): void {
    mkdirSync(join(dir, 'home', '.claude'), { recursive: true })
    writeFileSync(settings(), ORIGINAL)
  }
  const item = (label: string) => tray().menu!.items.find((i: any) => i.label === label)
  /** Connects Claude Code from the tray, confirmed. */
  async function connectClaudeCode(): Promise<void> {
    state.messageBoxResponse = 0
    tray().menu!.click('Claude Code')
    await eventually(() => item('Claude Code')?.checked === true)
  }
  /** `burnrate connect codex --url https://burnrate.example.com` (another Burnrate, a team server) with this data folder; Codex's config file. */
  async function connectCodexElsewhere(dataDir: string): Promise<string> {
    const { AgentConnections } = await import('../../src/main/connect/connections')
    new AgentConnections({ home: join(dir, 'home'), env: { PATH: '' }, platform: 'linux', dataDir }).connect('codex', 'https://burnrate.example.com')
    return join(dir, 'home', '.codex', 'config.toml')
  }

  it('shows the change, connects on confirm, turns start at login on once, and disconnects from the menu', async () => {
    writeConfig()
    claudeInstalled()
    const d = await launch()
    expect(item('Claude Code')).toMatchObject({ type: 'checkbox', checked: false })

    state.messageBoxResponse = 1 // Cancel
    tray().menu!.click('Claude Code')
    await eventually(() => state.messageBoxes.length === 1)
    expect(state.messageBoxes[0].message).toBe(`Point Claude Code at Burnrate (${d.url})?`)
    expect(state.messageBoxes[0].detail).toContain(`~/.claude/settings.json:\n  env.ANTHROPIC_BASE_URL: (not set) → ${d.url}`)
    expect(readFileSync(settings(), 'utf8')).toBe(ORIGINAL)

    state.messageBoxResponse = 0 // Connect
    tray().menu!.click('Claude Code')
    await eventually(() => item('Claude Code')?.checked === true)
    expect(readFileSync(settings(), 'utf8')).toContain(`"ANTHROPIC_BASE_URL": "${d.url}"`)
    expect(menuLabels()).toContain('    last call: none yet')
    // A call from Claude Code shows under it: its calls are arriving.
    upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('anthropic/messages-nonstream-basic.json') }))
    await postJson(`${d.url}/v1/messages`, { model: 'claude-sonnet-4-5', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }, {
      'x-api-key': 'sk-ant-desktop-agent-key',
      'anthropic-version': '2023-06-01',
      'user-agent': 'claude-cli/2.1.330 (external, cli)',
    })
    await eventually(() => menuLabels().includes('    last call: just now'), 10_000)
    const autostart = join(dir, 'xdg', 'autostart', 'burnrate.desktop')
    expect(existsSync(autostart)).toBe(true)

    // Turned off by hand, it stays off when another agent is connected.
    tray().menu!.click('Start at login')
    expect(existsSync(autostart)).toBe(false)
    tray().menu!.click('SDK scripts (shell profile)')
    await eventually(() => item('SDK scripts (shell profile)')?.checked === true)
    expect(existsSync(autostart)).toBe(false)

    tray().menu!.click('Disconnect all agents')
    await eventually(() => item('Claude Code')?.checked === false)
    expect(readFileSync(settings(), 'utf8')).toBe(ORIGINAL)
  })

  it('asks on quit while an agent points here: cancel keeps running, disconnect restores and quits', async () => {
    writeConfig()
    claudeInstalled()
    const d = await launch()
    await connectClaudeCode()
    state.messageBoxes = []

    state.messageBoxResponse = 3 // Cancel
    app.quit()
    await eventually(() => state.messageBoxes.length === 1)
    expect(state.messageBoxes[0].message).toBe('Claude Code points at Burnrate')
    expect(state.messageBoxes[0].buttons).toEqual(['Disconnect and quit', 'Keep a server running', 'Quit anyway', 'Cancel'])
    expect(state.exited).toBe(false)
    expect((await request(`${d.url}/api/health`)).status).toBe(200)

    state.messageBoxResponse = 0 // Disconnect and quit
    app.quit()
    await eventually(() => state.exited, 10_000)
    expect(readFileSync(settings(), 'utf8')).toBe(ORIGINAL)
  })

  it('"Disconnect and quit" puts back only the agents it named: one pointed at another Burnrate (a team server) stays', async () => {
    writeConfig()
    claudeInstalled()
    const d = await launch()
    await connectClaudeCode()
    const codex = await connectCodexElsewhere(d.config.data_dir)
    state.messageBoxes = []
    state.messageBoxResponse = 0 // Disconnect and quit
    app.quit()
    await eventually(() => state.exited, 10_000)
    expect(state.messageBoxes[0].message).toBe('Claude Code points at Burnrate')
    expect(readFileSync(settings(), 'utf8')).toBe(ORIGINAL)
    expect(readFileSync(codex, 'utf8')).toContain('openai_base_url = "https://burnrate.example.com/v1"')
  })

  it('"Disconnect and quit" with a settings file that cannot be put back asks again instead of quitting silently', async () => {
    writeConfig()
    claudeInstalled()
    const d = await launch()
    await connectClaudeCode()
    chmodSync(settings(), 0o444) // the person (or a tool) made it read-only meanwhile
    state.messageBoxes = []
    state.messageBoxResponses = [0, 2] // Disconnect and quit; then Cancel
    app.quit()
    await eventually(() => state.messageBoxes.length === 2)
    expect(state.messageBoxes[1].message).toBe('Not every agent could be disconnected')
    expect(state.messageBoxes[1].detail).toContain('Claude Code: ')
    expect(state.messageBoxes[1].buttons).toEqual(['Keep a server running', 'Quit anyway', 'Cancel'])
    expect(state.exited).toBe(false)
    expect((await request(`${d.url}/api/health`)).status).toBe(200)
    expect(readFileSync(settings(), 'utf8')).toContain('ANTHROPIC_BASE_URL')
    // Put right, and quit again: disconnected, then gone.
    chmodSync(settings(), 0o644)
    state.messageBoxResponses = [0]
    app.quit()
    await eventually(() => state.exited, 10_000)
    expect(readFileSync(settings(), 'utf8')).toBe(ORIGINAL)
  })

  it('started on another port: a notification names the agents, and a click re-points them', async () => {
    claudeInstalled()
    writeConfig()
    const first = await launch()
    await connectClaudeCode()
    state.messageBoxResponse = 2 // quit anyway
    await quit()
    running = null

    resetElectron(dir)
    writeConfig({}, 0) // port 0: the new server gets another port than the agent points at
    const second = await launch()
    expect(second.url).not.toBe(first.url)
    const notice = state.notifications.find((n) => n.options.title === 'Agents point at another port')!
    expect(notice.options.body).toContain(`Claude Code points at ${first.url}, but Burnrate runs on ${second.url} now`)
    notice.emit('click')
    expect(readFileSync(settings(), 'utf8')).toContain(`"ANTHROPIC_BASE_URL": "${second.url}"`)
  })

  it('started on another port: an agent pointed at another Burnrate (a team server) is neither named nor moved', async () => {
    claudeInstalled()
    writeConfig()
    const first = await launch()
    await connectClaudeCode()
    const codex = await connectCodexElsewhere(first.config.data_dir)
    state.messageBoxResponse = 2 // quit anyway
    await quit()
    running = null

    resetElectron(dir)
    writeConfig({}, 0)
    const second = await launch()
    const notice = state.notifications.find((n) => n.options.title === 'Agents point at another port')!
    expect(notice.options.body).toBe(`Claude Code points at ${first.url}, but Burnrate runs on ${second.url} now. Click to re-point it here.`)
    notice.emit('click')
    expect(readFileSync(settings(), 'utf8')).toContain(`"ANTHROPIC_BASE_URL": "${second.url}"`)
    expect(readFileSync(codex, 'utf8')).toContain('openai_base_url = "https://burnrate.example.com/v1"')
  })

  it('started on another port with only an agent pointed at another Burnrate: no notification', async () => {
    writeConfig()
    const d = await launch()
    await connectCodexElsewhere(d.config.data_dir)
    state.messageBoxResponse = 2
    await quit()
    running = null

    resetElectron(dir)
    writeConfig({}, 0)
    await launch()
    expect(state.notifications.filter((n) => n.options.title === 'Agents point at another port')).toEqual([])
  })

  it('cannot start because another Burnrate holds the data folder (still starting, not answering yet): its agents are not offered to be disconnected', async () => {
    claudeInstalled()
    writeConfig()
    await launch()
    await connectClaudeCode()
    state.messageBoxResponse = 2 // quit anyway: the agent stays connected
    await quit()
    running = null
    const connected = readFileSync(settings(), 'utf8')
    expect(connected).toContain('ANTHROPIC_BASE_URL')

    // A headless Burnrate on this folder (`burnrate serve` at login, say) has claimed it and is still
    // loading: its server.lock names its live process and the address it is about to listen on.
    const other = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)'], { stdio: 'ignore' })
    cleanups.push(() => other.kill('SIGKILL'))
    const free = http.createServer()
    await new Promise<void>((r) => free.listen(0, '127.0.0.1', r))
    const soon = (free.address() as AddressInfo).port
    await new Promise((r) => free.close(r))
    writeFileSync(join(dir, 'server.lock'), `${JSON.stringify({ pid: other.pid, url: `http://127.0.0.1:${soon}`, started_at: new Date().toISOString(), claim: 'headless' })}\n`, { mode: 0o600 })

    resetElectron(dir)
    state.messageBoxResponse = 0 // were the disconnect offered: taken
    expect(await runDesktop({ env: { XDG_CONFIG_HOME: join(dir, 'xdg') }, log: silentLogger, signals: false, home: join(dir, 'home') })).toBeNull()
    // The agent reaches that Burnrate: it is not stranded, and stays connected.
    expect(state.messageBoxes).toEqual([])
    expect(state.errorBoxes).toHaveLength(1)
    expect(state.errorBoxes[0].content).toContain(`another Burnrate (pid ${other.pid}) serves this data folder`)
    expect(readFileSync(settings(), 'utf8')).toBe(connected)
  })

  it('cannot start (a typo in config.yaml) while an agent points here: the error offers to disconnect it', async () => {
    claudeInstalled()
    writeConfig()
    await launch()
    await connectClaudeCode()
    state.messageBoxResponse = 2 // quit anyway: the agent stays connected
    await quit()
    expect(readFileSync(settings(), 'utf8')).toContain('ANTHROPIC_BASE_URL')

    writeFileSync(join(dir, 'config.yaml'), 'servr:\n  port: 1\n')
    resetElectron(dir)
    state.messageBoxResponse = 1 // Quit: nothing changed
    expect(await runDesktop({ env: {}, log: silentLogger, signals: false, home: join(dir, 'home') })).toBeNull()
    expect(state.errorBoxes).toHaveLength(0)
    expect(state.messageBoxes).toHaveLength(1)
    expect(state.messageBoxes[0]).toMatchObject({ message: 'Burnrate cannot start', buttons: ['Disconnect agents and quit', 'Quit'] })
    expect(state.messageBoxes[0].detail).toContain('unknown key "servr"')
    expect(state.messageBoxes[0].detail).toContain('Claude Code points at Burnrate')
    expect(readFileSync(settings(), 'utf8')).toContain('ANTHROPIC_BASE_URL')

    resetElectron(dir)
    state.messageBoxResponse = 0 // Disconnect agents and quit
    expect(await runDesktop({ env: {}, log: silentLogger, signals: false, home: join(dir, 'home') })).toBeNull()
    expect(readFileSync(settings(), 'utf8')).toBe(ORIGINAL)
    expect(state.quitCalls).toBe(1)
  })
})
