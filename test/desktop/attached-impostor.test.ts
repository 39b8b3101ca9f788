import { type ChildProcess, spawn } from 'node:child_process'
import { existsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { stringify } from 'yaml'
import { callRecord } from '../../src/main/desktop-logic/test-helpers'
import { silentLogger } from '../../src/main/log'
import { eventually } from '../support/http'
import { startTestServer } from '../support/server'
import { appEachTest } from './app-each-test'
import { state } from './fake-electron'

vi.mock('electron', () => import('./fake-electron'))

const { runDesktop } = await import('../../src/main/desktop/app')

const t = appEachTest('burnrate-attached-impostor-')
const cleanups: (() => Promise<unknown> | unknown)[] = []
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c()
})

const TOKEN = 'dash-token-0123456789'

/**
 * Another user's program that takes the port once the headless Burnrate the app attached to has
 * stopped, answering as Burnrate (README: on Linux such a program is never attached to: it would be
 * handed the dashboard's tokens and shown as your spend). Started as `nobody` (root is needed: CI
 * runs as root). It prints each request's path and authorization header.
 */
function impostor(port: number): { proc: ChildProcess; seen: string[]; listening: Promise<void> } {
  const seen: string[] = []
  const code = `require('http').createServer((q, s) => {
    console.log(JSON.stringify([q.url, q.headers.authorization ?? null]))
    const body = q.url.startsWith('/api/dashboard/summary') ? { today_spend_usd: 999, timezone: 'UTC' } : { status: 'ok', version: '9.9.9', uptime_s: 5 }
    s.setHeader('content-type', 'application/json')
    s.end(JSON.stringify(body))
  }).listen(${port}, '127.0.0.1', () => console.log('"listening"'))`
  const proc = spawn('/usr/bin/node', ['-e', code], { uid: 65534, gid: 65534, cwd: '/', stdio: ['ignore', 'pipe', 'inherit'] })
  let buffer = ''
  const listening = new Promise<void>((resolve, reject) => {
    proc.stdout!.on('data', (d) => {
      buffer += String(d)
      const lines = buffer.split('\n')
      buffer = lines.pop()!
      for (const line of lines) {
        if (line === '"listening"') resolve()
        else if (line) seen.push(line)
      }
    })
    proc.once('exit', (c) => reject(new Error(`the impostor exited (${c})`)))
  })
  return { proc, seen, listening }
}

const asNobody = process.platform === 'linux' && process.getuid?.() === 0 && existsSync('/usr/bin/node')

describe('attached, when the headless Burnrate stops and another user takes its port', () => {
  it.runIf(asNobody)('neither the tray nor the window hands that program the dashboard token or shows its numbers as the spend', async () => {
    const headless = await startTestServer({ timezone: 'UTC', dashboard: { token: TOKEN } })
    cleanups.push(() => headless.cleanup())
    headless.server.ledger.record(callRecord({ cost_usd: 7 }))
    headless.server.ledger.flush()
    const port = Number(new URL(headless.url).port)
    writeFileSync(join(t.dir, 'config.yaml'), stringify({ server: { host: '127.0.0.1', port }, timezone: 'UTC', dashboard: { token: TOKEN } }))
    const d = await runDesktop({ argv: ['burnrate'], env: { XDG_CONFIG_HOME: join(t.dir, 'xdg') }, platform: 'linux', log: silentLogger, signals: false, home: join(t.dir, 'home') })
    if (!d) throw new Error(`desktop did not start: ${JSON.stringify(state.errorBoxes)}`)
    expect(d.attachedTo).toBe(headless.url)
    const tray = state.trays[0]
    await eventually(() => tray.tooltip.split('\n')[0] === 'Burnrate: $7.00 today')
    const session = state.windows[0].webContents.session
    expect(await session.request(`${headless.url}/api/dashboard/summary`)).toBe(true)

    await headless.stop()
    const other = impostor(port)
    cleanups.push(() => other.proc.kill())
    await other.listening
    // The tray asks twice a second and the budgets every 2 s: time for several of each.
    await sleep(4000)
    expect(other.seen.filter((l) => l.includes(TOKEN))).toEqual([])
    expect(tray.tooltip).not.toContain('$999.00')
    expect(tray.tooltip.split('\n')[0]).toBe('Burnrate: server not answering')
    // The window's requests there (its session cookie in them) are cancelled too; others go ahead.
    expect(await session.request(`${headless.url}/api/dashboard/summary`)).toBe(false)
    expect(await session.request(`${headless.url.replace('127.0.0.1', 'localhost')}/x`)).toBe(true)
    expect(await session.request('https://example.com/')).toBe(true)
  }, 60_000)
})
