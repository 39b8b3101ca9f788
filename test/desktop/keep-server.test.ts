import { execFileSync, spawn } from 'node:child_process'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest'
import { stringify } from 'yaml'
import { silentLogger } from '../../src/main/log'
import { PROVIDER_NAMES } from '../../src/main/providers/registry'
import { fixture } from '../support/fixtures'
import { eventually, postJson, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { baseUrlFor } from '../support/server'
import { listeningUrl } from '../support/child'
import { PLAIN_HOST, startConnectProxy } from '../network/support'
import { app, resetElectron, state } from './fake-electron'

vi.mock('electron', () => import('./fake-electron'))
const { runDesktop } = await import('../../src/main/desktop/app')

/**
 * "Keep a server running" on quit starts the built out/main/cli.js as a headless server. On a
 * machine whose only way out is the proxy in the system's settings (which the app asked Electron
 * for), that server must go through it too, or the agents left pointing at it get 502s.
 */

const ROOT = resolve(__dirname, '../..')

let upstream: MockUpstream
let dir: string
/** The headless server the app left running (its pid, from the data folder's server.lock). */
let headlessPid: number | null = null

beforeAll(async () => {
  if (!existsSync(join(ROOT, 'out/main/cli.js'))) execFileSync('npx', ['electron-vite', 'build'], { cwd: ROOT, stdio: 'ignore' })
  upstream = await startMockUpstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('anthropic/messages-nonstream-basic.json') }))
})
afterAll(async () => {
  await upstream.close()
})
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'burnrate-keep-server-'))
  resetElectron(dir)
  state.appPath = ROOT
})
afterEach(() => {
  if (headlessPid) {
    try {
      process.kill(headlessPid, 'SIGKILL')
    } catch {}
  }
  headlessPid = null
  rmSync(dir, { recursive: true, force: true })
})

describe('"Keep a server running" on quit', () => {
  it("goes through the system's proxy the app used, so the agents' calls still reach the provider", async () => {
    const proxy = await startConnectProxy()
    try {
      const providers: Record<string, unknown> = {}
      for (const name of PROVIDER_NAMES) providers[name] = { base_url: baseUrlFor(name, upstream.url) }
      // Anthropic at a name only the corporate proxy resolves; the system's settings send it there.
      providers.anthropic = { base_url: `http://${PLAIN_HOST}:${new URL(upstream.url).port}` }
      writeFileSync(join(dir, 'config.yaml'), stringify({ server: { host: '127.0.0.1', port: 0 }, providers, timezone: 'UTC', pricing: { auto_update: false } }))
      state.systemProxy = (url) => (url.includes(PLAIN_HOST) ? `PROXY 127.0.0.1:${proxy.port}; DIRECT` : 'DIRECT')
      mkdirSync(join(dir, 'home', '.claude'), { recursive: true })
      writeFileSync(join(dir, 'home', '.claude', 'settings.json'), '{}\n')

      const d = await runDesktop({ argv: ['burnrate'], env: { XDG_CONFIG_HOME: join(dir, 'xdg') }, platform: 'linux', log: silentLogger, signals: false, home: join(dir, 'home') })
      if (!d) throw new Error(`desktop did not start: ${JSON.stringify(state.errorBoxes)}`)
      const call = () =>
        postJson(`${d.url}/v1/messages`, { model: 'claude-sonnet-4-5', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }, {
          'x-api-key': 'sk-ant-keep-server-key-1',
          'anthropic-version': '2023-06-01',
        })
      expect((await call()).status).toBe(200)

      // Connect Claude Code, then quit choosing "Keep a server running".
      state.messageBoxResponse = 0
      state.trays[0].menu!.click('Claude Code')
      await eventually(() => readFileSync(join(dir, 'home', '.claude', 'settings.json'), 'utf8').includes(d.url))
      state.messageBoxResponse = 1
      app.quit()
      await eventually(() => state.exited, 15_000)
      await eventually(async () => (await request(`${d.url}/api/health`)).status === 200, 20_000)
      headlessPid = (JSON.parse(readFileSync(join(dir, 'server.lock'), 'utf8')) as { pid: number }).pid

      // Claude Code still points at d.url: its next call goes through the kept server, and the proxy.
      const res = await call()
      expect({ status: res.status, viaProxy: proxy.forwarded.length }).toEqual({ status: 200, viaProxy: 2 })
    } finally {
      await proxy.close()
    }
  })
})

describe('opening the app again while the kept server runs', () => {
  let other: http.Server | null = null
  afterEach(async () => {
    if (!state.exited) {
      app.quit()
      await eventually(() => state.exited, 15_000)
    }
    if (other) await new Promise((r) => other!.close(r))
    other = null
  })

  /**
   * The first launch found the configured port taken by another program; the person took the
   * offered port, connected agents and quit with "Keep a server running". That program still
   * holds the configured port: the app finds the kept server by the data folder's server.lock.
   */
  it('attaches to it on the port it was given, though the configured port answers as another program', async () => {
    other = http.createServer((_req, res) => res.end('not burnrate'))
    await new Promise<void>((r) => other!.listen(0, '127.0.0.1', r))
    const takenPort = (other.address() as AddressInfo).port
    const configFile = join(dir, 'config.yaml')
    writeFileSync(configFile, stringify({ server: { host: '127.0.0.1', port: takenPort }, timezone: 'UTC', pricing: { auto_update: false } }))
    // The kept server, as the app starts it (out/main/cli.js serve), on the port chosen at the first launch.
    const headless = spawn(process.execPath, [join(ROOT, 'out/main/cli.js'), 'serve', '--data-dir', dir, '--port', '0', '--config', configFile], {
      env: { ...process.env, BURNRATE_CONFIG: '', BURNRATE_PORT: '', BURNRATE_DATA_DIR: '', BURNRATE_PRICE_AUTO_UPDATE: 'false' },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    headlessPid = headless.pid ?? null
    const kept = await listeningUrl(headless).url

    state.messageBoxResponse = 0 // were it asked: "Use port N"
    const d = await runDesktop({ argv: ['burnrate'], env: { XDG_CONFIG_HOME: join(dir, 'xdg') }, platform: 'linux', log: silentLogger, signals: false, home: join(dir, 'home') })
    expect({ started: d !== null, errors: state.errorBoxes.map((b) => b.content) }).toEqual({ started: true, errors: [] })
    expect(d!.url).toBe(kept)
  })
})
