import { createHash } from 'node:crypto'
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
 * The tray attached to a headless Burnrate whose dashboard answers 500 (its ledger cannot be read:
 * the summary and the budgets alike). The headline said so ("Today: — (server error)"), but the
 * budget line read "Blocking: … daily $1.10 of $1.00" as if just read, from the tray's last answer
 * before the errors: a limit raised or a key's spend moved since would not show, and nothing told
 * the user the line was not current. While the budgets cannot be read, the line the tray keeps (a
 * block may well still stand until its reset) says when it was last read; once they answer again, it
 * is plain again. A real server on SQLite behind a front on the port the app attaches to.
 */
const KEY = 'sk-tray-stale-budget-0123456789'
const KEY_HASH = createHash('sha256').update(KEY).digest('hex')
const HINT = 'sk-…6789'
const fake = appEachTest('burnrate-tray-budget-stale-')
const menu = () => (state.trays[0]?.menu?.items ?? []).map((i) => i.label ?? '')
const budgetLine = () => menu().find((l) => /^(Warning|Blocking)/.test(l))
const tooltip = () => state.trays[0]?.tooltip ?? ''
let headless: TestServer | undefined
let front: Server | undefined
afterAll(async () => {
  if (front) await new Promise((r) => front!.close(r))
  await headless?.cleanup()
})

describe('the attached tray when the server answers 500 to the summary and the budgets', () => {
  it('marks the budget line it last read as not current, and plain again once it reads it', async () => {
    headless = await startTestServer({ timezone: 'UTC', budgets: { rules: [{ api_key_pattern: KEY, daily_limit_usd: 1, action: 'block' }] } })
    headless.server.ledger.record(callRecord({ api_key_hash: KEY_HASH, cost_usd: 1.1 }))
    await headless.server.ledger.flush()
    let broken = false
    const target = headless.url
    front = createServer((req, res) => {
      if (broken && req.url?.startsWith('/api/dashboard/')) {
        res.writeHead(500, { 'content-type': 'application/json' })
        res.end(JSON.stringify({ error: { type: 'internal', message: 'The ledger could not be read.' } }))
        return
      }
      const headers = Object.fromEntries(Object.entries(req.headers).filter(([k, v]) => typeof v === 'string' && k !== 'host' && k !== 'connection')) as Record<string, string>
      fetch(`${target}${req.url}`, { method: req.method, headers })
        .then(async (r) => {
          res.writeHead(r.status, Object.fromEntries([...r.headers].filter(([k]) => k !== 'content-encoding' && k !== 'transfer-encoding' && k !== 'content-length')))
          res.end(Buffer.from(await r.arrayBuffer()))
        })
        .catch(() => res.destroy())
    })
    await new Promise<void>((r) => front!.listen(0, '127.0.0.1', r))
    const addr = front.address()
    const port = typeof addr === 'object' && addr ? addr.port : 0
    writeFileSync(join(fake.dir, 'config.yaml'), stringify({ server: { host: '127.0.0.1', port }, timezone: 'UTC' }))
    const d = await runDesktop({ argv: ['burnrate'], env: { XDG_CONFIG_HOME: join(fake.dir, 'xdg') }, platform: 'linux', log: silentLogger, signals: false, home: join(fake.dir, 'home') })
    if (!d) throw new Error(`desktop did not start: ${JSON.stringify(state.errorBoxes)}`)
    const fresh = `Blocking: ${HINT} daily $1.10 of $1.00`
    await eventually(() => budgetLine() === fresh, 30_000)
    expect(tooltip().split('\n')).toContain(fresh)

    broken = true
    await eventually(() => menu()[0] === 'Today: — (server error)', 30_000)
    // The line stays (the block stands until its reset) but says it is the last one read.
    await eventually(() => /^Blocking: sk-…6789 daily \$1\.10 of \$1\.00 \(last read \d\d:\d\d\)$/.test(budgetLine() ?? ''), 30_000)
    expect(tooltip().split('\n')[1]).toMatch(/^Blocking: sk-…6789 daily \$1\.10 of \$1\.00 \(last read \d\d:\d\d\)$/)

    broken = false
    await eventually(() => budgetLine() === fresh && menu()[0] === 'Today: $1.10', 30_000)
  }, 90_000)
})
