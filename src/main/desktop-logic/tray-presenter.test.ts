import { mkdtempSync, rmSync } from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { eventually } from '../../../test/support/http'
import { openDatabase } from '../ledger/db'
import { Ledger } from '../ledger/ledger'
import { SqliteStore } from '../storage/sqlite'
import { httpSpend, ledgerSpend } from './spend-source'
import { FakeBudgets, budgetAlert, callRecord } from './test-helpers'
import { TrayPresenter } from './tray-presenter'
import type { TrayView } from './tray-view'

let dir: string
let ledger: Ledger
let db: ReturnType<typeof openDatabase>

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'burnrate-tray-'))
  db = openDatabase(join(dir, 'burnrate.db'))
  ledger = new Ledger(db, { flushIntervalMs: 10, maxPending: 1000, timezone: 'UTC' })
})
afterEach(() => {
  ledger.close()
  db.close()
  rmSync(dir, { recursive: true, force: true })
})

describe('TrayPresenter over the ledger', () => {
  it('shows today on start, then the new total after a recorded call', async () => {
    ledger.record(callRecord({ cost_usd: 1.5 }))
    const views: TrayView[] = []
    const p = new TrayPresenter({ spend: ledgerSpend(ledger), budgets: null, platform: 'darwin', render: (v) => views.push(v) })
    p.start()
    expect(views.at(-1)?.title).toBe('$1.50')
    ledger.record(callRecord({ cost_usd: 0.25 }))
    await eventually(() => views.at(-1)?.title === '$1.75')
    expect(views.at(-1)?.tooltip).toBe('Burnrate: $1.75 today')
    p.stop()
  })

  it('draws a burst of calls a couple of times, not once per call, and ends on the exact total', async () => {
    const views: TrayView[] = []
    const p = new TrayPresenter({ spend: ledgerSpend(ledger), budgets: null, platform: 'linux', render: (v) => views.push(v) })
    p.start()
    for (let i = 0; i < 2000; i++) ledger.record(callRecord({ cost_usd: 0.005 }))
    await eventually(() => views.at(-1)?.headline === 'Today: $10.00', 3000)
    // the start, the first call of the burst, and the merged rest
    expect(views.length).toBeLessThanOrEqual(3)
    p.stop()
  })

  it('does not count yesterday', () => {
    ledger.record(callRecord({ ts: Date.now() - 2 * 86_400_000, cost_usd: 100 }))
    const views: TrayView[] = []
    const p = new TrayPresenter({ spend: ledgerSpend(ledger), budgets: null, platform: 'linux', render: (v) => views.push(v) })
    p.start()
    expect(views.at(-1)?.headline).toBe('Today: $0.00')
    p.stop()
  })

  it('changes the icon when a budget rule reaches its warning level and when it blocks', async () => {
    const budgets = new FakeBudgets()
    const views: TrayView[] = []
    const p = new TrayPresenter({ spend: ledgerSpend(ledger), budgets, platform: 'linux', render: (v) => views.push(v), intervalMs: 50 })
    p.start()
    expect(views.at(-1)?.icon).toBe('ok')
    budgets.raise(budgetAlert({ level: 'warning' }))
    await eventually(() => views.at(-1)?.icon === 'warning')
    budgets.raise(budgetAlert({ level: 'blocking', spent_usd: 5 }))
    await eventually(() => views.at(-1)?.icon === 'blocking')
    expect(views.at(-1)?.budgetLine).toBe('Blocking: sk-dev-* daily $5.00 of $5.00')
    p.stop()
  })

  it("marks today's spend once a call of no known price is stored, and drops the mark when it is gone", async () => {
    ledger.record(callRecord({ cost_usd: 1.2 }))
    const views: TrayView[] = []
    const src = ledgerSpend(ledger, { store: new SqliteStore(db), pollMs: 20 })
    const p = new TrayPresenter({ spend: src, budgets: null, platform: 'darwin', render: (v) => views.push(v), intervalMs: 20 })
    p.start()
    await eventually(() => views.at(-1)?.title === '$1.20')
    // Recorded at $0 (priced false): the counters do not move, the store holds it.
    ledger.record(callRecord({ model: 'qwen3-local', cost_usd: 0, priced: false }))
    ledger.record(callRecord({ model: 'qwen3-local', cost_usd: 0, priced: false }))
    await eventually(() => views.at(-1)?.title === '$1.20+')
    expect(views.at(-1)?.unpricedLine).toBe("2 calls today have no price: see the dashboard's Unpriced models")
    // Priced after all (as a re-price does): the mark goes.
    db.prepare("UPDATE calls SET priced = 1 WHERE model = 'qwen3-local'").run()
    await eventually(() => views.at(-1)?.title === '$1.20')
    expect(views.at(-1)?.unpricedLine).toBeNull()
    p.stop()
    src.stop()
  })

  it('stops listening when stopped', () => {
    const views: TrayView[] = []
    const p = new TrayPresenter({ spend: ledgerSpend(ledger), budgets: null, platform: 'linux', render: (v) => views.push(v) })
    p.start()
    p.stop()
    ledger.record(callRecord({ cost_usd: 3 }))
    expect(views).toHaveLength(1)
  })
})

describe('httpSpend (attached to another Burnrate)', () => {
  it("marks today's spend with the summary's today_unpriced_requests", async () => {
    let unpriced: number | undefined = 3
    const server = http.createServer((_req, res) => {
      res.setHeader('content-type', 'application/json')
      res.end(JSON.stringify({ today_spend_usd: 1.2, month_spend_usd: 9, today_requests: 5, avg_cost_per_request_usd: 0.24, active_sessions: 0, error_rate: 0, today_unpriced_requests: unpriced, month_unpriced_requests: 3 }))
    })
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    const src = httpSpend(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, { pollMs: 20 })
    const views: TrayView[] = []
    const p = new TrayPresenter({ spend: src, budgets: null, platform: 'darwin', render: (v) => views.push(v), intervalMs: 20 })
    p.start()
    await eventually(() => views.at(-1)?.title === '$1.20+')
    expect(views.at(-1)?.unpricedLine).toBe("3 calls today have no price: see the dashboard's Unpriced models")
    // A server from before the count says nothing of it.
    unpriced = undefined
    await eventually(() => views.at(-1)?.title === '$1.20')
    expect(views.at(-1)?.unpricedLine).toBeNull()
    p.stop()
    src.stop()
    server.closeAllConnections()
    await new Promise((r) => server.close(r))
  })

  it('reads today_spend_usd from the summary endpoint and reports changes, a server error as one, and null when the server stops answering', async () => {
    let today = 2.5
    let up = true
    const seen: string[] = []
    const server = http.createServer((req, res) => {
      seen.push(req.url ?? '')
      if (!up) {
        res.statusCode = 503
        res.end()
        return
      }
      res.setHeader('content-type', 'application/json')
      res.end(JSON.stringify({ today_spend_usd: today, month_spend_usd: 9, today_requests: 3, avg_cost_per_request_usd: 1, active_sessions: 0, error_rate: 0 }))
    })
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    const src = httpSpend(url, { pollMs: 20 })
    const views: TrayView[] = []
    const p = new TrayPresenter({ spend: src, budgets: null, platform: 'linux', render: (v) => views.push(v), intervalMs: 20 })
    p.start()
    await eventually(() => views.at(-1)?.headline === 'Today: $2.50')
    today = 3.75
    await eventually(() => views.at(-1)?.headline === 'Today: $3.75')
    // A 503 is an answer: the server runs and says it cannot serve the figure now.
    up = false
    await eventually(() => views.at(-1)?.headline === 'Today: — (server error)')
    server.closeAllConnections()
    await new Promise((r) => server.close(r))
    await eventually(() => views.at(-1)?.headline === 'Today: —')
    expect(views.at(-1)?.tooltip).toBe('Burnrate: server not answering')
    p.stop()
    src.stop()
    expect(seen[0]).toBe('/api/dashboard/summary')
  })
})
