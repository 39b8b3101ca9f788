/**
 * `npm run bench dashboard`: the dashboard API at a year of a busy team's traffic. Fills a
 * fresh ledger with 1,000,000 calls over 60 days (several providers, models, tenants, agents,
 * API keys, thousands of sessions), builds the rollups from them (the start-up catch-up, which
 * is also what migration 2 runs on an existing ledger) and checks that they equal the raw sums,
 * measures what the rollups add to the ledger's batch writer, then times every endpoint over
 * real HTTP (keep-alive, one request at a time) and the export's rows per second.
 * BENCH_CALLS=<n> changes the size; BENCH_REPS=<n> the repetitions per endpoint (a multiple of 10).
 * The machine's load average is printed beside the figures: on a shared machine they mean little without it.
 */
import http from 'node:http'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { cpus, loadavg, tmpdir, totalmem } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { stringify } from 'yaml'
import { loadConfig } from '../../src/main/config/load'
import { DB_FILE } from '../../src/main/config/paths'
import { TIERS } from '../../src/main/dashboard/rollup/schema'
import { RollupWriter } from '../../src/main/dashboard/rollup/writer'
import { openDatabase } from '../../src/main/ledger/db'
import { Ledger } from '../../src/main/ledger/ledger'
import type { CallRecord } from '../../src/main/ledger/record'
import { silentLogger } from '../../src/main/log'
import { createBurnrate } from '../../src/main/server/server'
import { generateCalls } from './dashboard-data'

const CALLS = Number(process.env.BENCH_CALLS ?? 1_000_000)
const REPS = Number(process.env.BENCH_REPS ?? 200)
const ROUNDS = 10
const DAYS = 60
const TZ = 'Europe/Berlin'
const P95_TARGET_MS = 50
const EXPORT_TARGET_ROWS_S = 100_000

function log(line: string): void {
  process.stderr.write(`${line}\n`)
}

const COLUMNS = [
  'ts', 'provider', 'model', 'endpoint', 'api_key_hash', 'key_hint', 'tenant', 'agent', 'session', 'status',
  'streamed', 'input_tokens', 'output_tokens', 'cache_read_tokens', 'cache_write_tokens', 'cache_write_1h_tokens',
  'reasoning_tokens', 'cost_usd', 'priced', 'estimated', 'latency_ms', 'error',
] as const

function dbRow(c: CallRecord): unknown[] {
  return COLUMNS.map((k) => {
    const v = c[k]
    return typeof v === 'boolean' ? (v ? 1 : 0) : v
  })
}

/** The rollups against the calls: totals per tenant, and per grouping, in every table, must agree. */
function verifyRollups(db: ReturnType<typeof openDatabase>): string[] {
  const problems: string[] = []
  const close = (a: number, b: number) => Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(b))
  const raw = db.prepare(`SELECT tenant, count(*) n, total(cost_usd) c, total(input_tokens) i, total(latency_ms) l FROM calls GROUP BY tenant`).all() as any[]
  for (const table of ['dash_5m', ...TIERS.map((t) => t.totals)]) {
    const lat = table === 'dash_5m' ? '0' : 'total(latency_ms)'
    const got = new Map((db.prepare(`SELECT tenant, total(requests) n, total(cost_usd) c, total(input_tokens) i, ${lat} l FROM ${table} GROUP BY tenant`).all() as any[]).map((r) => [r.tenant, r]))
    for (const r of raw) {
      const g = got.get(r.tenant)
      if (!g || g.n !== r.n || !close(g.c, r.c) || g.i !== r.i || (table !== 'dash_5m' && !close(g.l, r.l))) problems.push(`${table} differs for tenant ${r.tenant}`)
    }
  }
  for (const [dim, col] of [['model', 'model'], ['provider', 'provider'], ['agent', 'agent'], ['session', 'session'], ['api_key', 'api_key_hash']]) {
    const want = new Map((db.prepare(`SELECT ${col} k, count(*) n, total(cost_usd) c FROM calls GROUP BY ${col}`).all() as any[]).map((r) => [r.k, r]))
    for (const { dims } of TIERS) {
      const got = db.prepare(`SELECT key k, total(requests) n, total(cost_usd) c FROM ${dims} WHERE dim = ? GROUP BY key`).all(dim) as any[]
      if (got.length !== want.size) problems.push(`${dims} ${dim}: ${got.length} keys, calls have ${want.size}`)
      for (const g of got) {
        const w = want.get(g.k)
        if (!w || w.n !== g.n || !close(w.c, g.c)) problems.push(`${dims} ${dim} differs for ${g.k}`)
      }
    }
  }
  const sess = db.prepare(`SELECT count(*) n, total(requests) r FROM dash_session`).get() as any
  const rawSess = db.prepare(`SELECT count(*) n, total(r) r FROM (SELECT count(*) r FROM calls WHERE session != '' GROUP BY tenant, agent, session)`).get() as any
  if (sess.n !== rawSess.n || sess.r !== rawSess.r) problems.push('dash_session differs')
  return problems
}

/** What the rollups add to writing a batch: the same calls through a Ledger with and without the hook. */
function batchWriteCost(dir: string, calls: CallRecord[]): { without: number; withRollups: number } {
  const time = (hook: boolean, name: string) => {
    const db = openDatabase(join(dir, name))
    const ledger = new Ledger(db, { flushIntervalMs: 50, maxPending: 1_000_000, timezone: TZ })
    if (hook) {
      const w = new RollupWriter(db)
      ledger.onBatch((rows) => w.onBatch(rows))
    }
    const BATCH = 50
    const t0 = performance.now()
    for (let i = 0; i < calls.length; i += BATCH) {
      for (const c of calls.slice(i, i + BATCH)) ledger.record(c)
      ledger.flush()
    }
    const us = ((performance.now() - t0) * 1000) / calls.length
    ledger.close()
    db.close()
    return us
  }
  time(true, 'warm.db')
  return { without: time(false, 'plain.db'), withRollups: time(true, 'rollups.db') }
}

function get(agent: http.Agent, url: string): Promise<{ status: number; bytes: number }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { agent }, (res) => {
        let bytes = 0
        res.on('data', (c: Buffer) => (bytes += c.length))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, bytes }))
        res.on('error', reject)
      })
      .on('error', reject)
  })
}

const pct = (sorted: number[], p: number) => sorted[Math.max(1, Math.ceil(p * sorted.length)) - 1]

export async function runDashboardBench(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'burnrate-dash-bench-'))
  const c = cpus()
  log(`dashboard bench on ${c.length} x ${c[0]?.model?.trim()}, ${(totalmem() / 2 ** 30).toFixed(1)} GiB RAM, Node ${process.version}`)
  let failed = false
  try {
    const now = Date.now()
    let t0 = performance.now()
    const { calls, sessions, tenants } = generateCalls(CALLS, DAYS, now)
    log(`generated ${calls.length.toLocaleString('en-US')} calls, ${sessions.toLocaleString('en-US')} sessions, ${tenants} tenants over ${DAYS} days in ${((performance.now() - t0) / 1000).toFixed(1)} s`)

    const db = openDatabase(join(dir, DB_FILE))
    const insert = db.prepare(`INSERT INTO calls (${COLUMNS.join(', ')}) VALUES (${COLUMNS.map(() => '?').join(', ')})`)
    t0 = performance.now()
    db.transaction(() => {
      for (const call of calls) insert.run(dbRow(call))
    })()
    const fillS = (performance.now() - t0) / 1000
    log(`filled the ledger (one transaction, prepared insert, every index): ${fillS.toFixed(1)} s, ${Math.round(calls.length / fillS).toLocaleString('en-US')} calls/s`)
    t0 = performance.now()
    const folded = new RollupWriter(db).catchUp()
    const foldS = (performance.now() - t0) / 1000
    log(`built the rollups from them (start-up catch-up / migration backfill): ${foldS.toFixed(1)} s for ${folded.toLocaleString('en-US')} calls`)
    const problems = verifyRollups(db)
    if (problems.length) {
      failed = true
      log(`ROLLUPS DISAGREE WITH CALLS:\n  ${problems.join('\n  ')}`)
    } else log('rollups equal the raw sums (per tenant in the 5-minute, hour and day tables, per grouping in the hour and day tables, per session)')
    const tables = ['dash_5m', ...TIERS.flatMap((t) => [t.totals, t.dims]), 'dash_session']
    log(`rollup rows: ${tables.map((n) => `${n} ${(db.prepare(`SELECT count(*) FROM ${n}`).pluck().get() as number).toLocaleString('en-US')}`).join(', ')}`)
    db.pragma('wal_checkpoint(TRUNCATE)')
    db.close()

    const cost = batchWriteCost(dir, calls.slice(-20_000))
    log(`ledger batch writer (batches of 50): ${cost.without.toFixed(1)} µs/call without rollups, ${cost.withRollups.toFixed(1)} µs/call with them (off the request path)`)

    const configFile = join(dir, 'config.yaml')
    writeFileSync(configFile, stringify({ server: { host: '127.0.0.1', port: 0 }, timezone: TZ }))
    const server = createBurnrate(loadConfig({ config: configFile, dataDir: dir }, {}), { log: silentLogger })
    const url = await server.listen()
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
    const tenant = 'tenant-2'
    const endpoints: string[] = [
      'summary', `summary?tenant=${tenant}`,
      ...['30m', '1h', '6h', '24h', '7d', '30d'].map((r) => `timeseries?range=${r}`),
      `timeseries?range=30d&tenant=${tenant}`,
      ...['model', 'provider', 'agent', 'session', 'api_key', 'tenant'].map((g) => `costs?group_by=${g}`),
      `costs?group_by=model&tenant=${tenant}`, `costs?group_by=session&range=24h`,
      'sessions', `sessions?tenant=${tenant}`,
      'expensive', 'expensive?range=30m', 'expensive?range=24h', `expensive?tenant=${tenant}`, `expensive?range=1h&tenant=${tenant}`,
      'stats', 'stats?range=30m', 'stats?range=7d', 'stats?range=30d', `stats?range=30d&tenant=${tenant}`,
    ]
    log(`\nendpoint latency over HTTP, ${REPS} requests each in ${ROUNDS} interleaved rounds (ms); load average before: ${loadavg().map((x) => x.toFixed(1)).join(' ')}`)
    for (const e of endpoints) for (let i = 0; i < 5; i++) await get(agent, `${url}/api/dashboard/${e}`)
    const times = new Map<string, number[]>(endpoints.map((e) => [e, []]))
    const bytes = new Map<string, number>()
    for (let round = 0; round < ROUNDS; round++) {
      // The order rotates each round, so a burst of load from elsewhere is spread over every endpoint.
      const k = round % endpoints.length
      for (const e of [...endpoints.slice(k), ...endpoints.slice(0, k)]) {
        for (let i = 0; i < REPS / ROUNDS; i++) {
          const s = performance.now()
          const r = await get(agent, `${url}/api/dashboard/${e}`)
          times.get(e)!.push(performance.now() - s)
          if (r.status !== 200) throw new Error(`${e} answered ${r.status}`)
          bytes.set(e, r.bytes)
        }
      }
    }
    log(`${'endpoint'.padEnd(44)} ${'p50'.padStart(7)} ${'p95'.padStart(7)} ${'max'.padStart(7)}  bytes`)
    for (const e of endpoints) {
      const ts = times.get(e)!.sort((a, b) => a - b)
      const p95 = pct(ts, 0.95)
      if (p95 > P95_TARGET_MS) failed = true
      log(`${('/' + e).padEnd(44)} ${pct(ts, 0.5).toFixed(2).padStart(7)} ${p95.toFixed(2).padStart(7)} ${ts[ts.length - 1].toFixed(2).padStart(7)}  ${bytes.get(e)}${p95 > P95_TARGET_MS ? '  OVER TARGET' : ''}`)
    }
    log(`load average after: ${loadavg().map((x) => x.toFixed(1)).join(' ')}`)
    log(`\nexport (every call of the window, streamed)`)
    for (const e of ['export?format=csv&range=30d', 'export?format=json&range=30d', `export?format=csv&range=30d&tenant=${tenant}`]) {
      const rows = (server.db.prepare(`SELECT count(*) FROM calls WHERE ts >= ?${e.includes('tenant') ? ` AND tenant = '${tenant}'` : ''}`).pluck().get(Date.now() - 30 * 86_400_000) as number)
      const s = performance.now()
      const r = await get(agent, `${url}/api/dashboard/${e}`)
      const secs = (performance.now() - s) / 1000
      const rate = rows / secs
      if (r.status !== 200) throw new Error(`${e} answered ${r.status}`)
      if (rate < EXPORT_TARGET_ROWS_S) failed = true
      log(`${('/' + e).padEnd(44)} ${rows.toLocaleString('en-US')} calls, ${(r.bytes / 2 ** 20).toFixed(0)} MiB in ${secs.toFixed(2)} s: ${Math.round(rate).toLocaleString('en-US')} calls/s${rate < EXPORT_TARGET_ROWS_S ? '  UNDER TARGET' : ''}`)
    }
    agent.destroy()
    await server.close()
    log(`\ntargets: every endpoint p95 <= ${P95_TARGET_MS} ms, export >= ${EXPORT_TARGET_ROWS_S.toLocaleString('en-US')} calls/s: ${failed ? 'NOT MET' : 'met'}`)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
  if (failed) process.exitCode = 1
}
