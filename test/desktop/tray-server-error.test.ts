import { createServer, type Server } from 'node:http'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, describe, expect, it, vi } from 'vitest'
import { stringify } from 'yaml'
import { callRecord } from '../../src/main/desktop-logic/test-helpers'
import { silentLogger } from '../../src/main/log'
import { eventually } from '../support/http'
import { type TestServer, startTestServer } from '../support/server'
import { appEachTest } from './app-each-test'
import { state } from './fake-electron'

vi.mock('electron', () => import('./fake-electron'))
const { runDesktop } = await import('../../src/main/desktop/app')

/**
 * The tray attached to a headless Burnrate whose `/api/dashboard/summary` answers 500 (the
 * contract's `internal` error): it answers, so the tray must not say "server not answering" (which
 * sends a person to look for a stopped server), but that the server answered with an error.
 * A real server on SQLite, with a front on the port the app attaches to that forwards every
 * request to it and, while `broken`, answers the summary with a 500 in the contract's error shape.
 */
const fake = appEachTest('burnrate-tray-server-error-')
const menu = () => (state.trays[0]?.menu?.items ?? []).map((i) => i.label ?? '')
const firstLine = () => (state.trays[0]?.tooltip ?? '').split('\n')[0]
let headless: TestServer | undefined
let front: Server | undefined
afterAll(async () => {
  if (front) await new Promise((r) => front!.close(r))
  await headless?.cleanup()
})

describe('the attached tray when the server answers 500 to the summary', () => {
  it('says the server answered with an error, then shows the spend once it answers again', async () => {
    headless = await startTestServer({ timezone: 'UTC' })
    headless.server.ledger.record(callRecord({ cost_usd: 2.5 }))
    await headless.server.ledger.flush()
    let broken = true
    const target = headless.url
    front = createServer((req, res) => {
      if (broken && req.url?.startsWith('/api/dashboard/summary')) {
        res.writeHead(500, { 'content-type': 'application/json' })
        res.end(JSON.stringify({ error: { type: 'internal', message: 'The summary could not be read.' } }))
        return
      }
      const chunks: Buffer[] = []
      req.on('data', (c: Buffer) => chunks.push(c))
      req.on('end', () => {
        const headers = Object.fromEntries(Object.entries(req.headers).filter(([k, v]) => typeof v === 'string' && k !== 'host' && k !== 'connection')) as Record<string, string>
        const body = chunks.length ? Buffer.concat(chunks) : undefined
        fetch(`${target}${req.url}`, { method: req.method, headers, body })
          .then(async (r) => {
            res.writeHead(r.status, Object.fromEntries([...r.headers].filter(([k]) => k !== 'content-encoding' && k !== 'transfer-encoding' && k !== 'content-length')))
            res.end(Buffer.from(await r.arrayBuffer()))
          })
          .catch(() => res.destroy())
      })
    })
    await new Promise<void>((r) => front!.listen(0, '127.0.0.1', r))
    const addr = front.address()
    const port = typeof addr === 'object' && addr ? addr.port : 0
    writeFileSync(join(fake.dir, 'config.yaml'), stringify({ server: { host: '127.0.0.1', port }, timezone: 'UTC' }))
    const d = await runDesktop({ argv: ['burnrate'], env: { XDG_CONFIG_HOME: join(fake.dir, 'xdg') }, platform: 'linux', log: silentLogger, signals: false, home: join(fake.dir, 'home') })
    if (!d) throw new Error(`desktop did not start: ${JSON.stringify(state.errorBoxes)}`)
    expect(d.attachedTo).toBe(`http://127.0.0.1:${port}`)
    await eventually(() => firstLine() === 'Burnrate: server error (HTTP 500) reading today’s spend', 30_000)
    expect(menu()[0]).toBe('Today: — (server error)')
    broken = false
    await eventually(() => firstLine() === 'Burnrate: $2.50 today', 30_000)
    expect(menu()[0]).toBe('Today: $2.50')
  }, 90_000)
})
