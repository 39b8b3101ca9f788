import { execFileSync } from 'node:child_process'
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
      expect({ status: res.status, viaProxy: proxy.targets.length }).toEqual({ status: 200, viaProxy: 2 })
    } finally {
      await proxy.close()
    }
  })
})
