/**
 * `npm run bench dashboard`: the dashboard API with a big ledger. Builds (or reuses, see
 * ledger-data.ts) a ledger of a year of a busy team's traffic (20 tenants, 200 API keys, 12
 * models, 9 agents, 40 projects, tens of thousands of sessions), written by the real batch
 * path with the real rollup writer; on a fresh build checks that the rollups equal the raw sums
 * and measures what the rollups add to the ledger's batch writer; states the database's size per
 * million calls; then times every endpoint over real HTTP (keep-alive, one request at a time) and
 * the export's rows per second, each beside its goal.
 * `--calls 10m` (or BENCH_CALLS=10000000) sets the size (default 1M); BENCH_REPS the
 * repetitions per endpoint (a multiple of 10); BENCH_FRESH=1 rebuilds the cached ledger;
 * BENCH_VERIFY=1 checks a reused one's rollups too; BENCH_EXPORT_THREADS sets the threads per export.
 * The machine's load average is printed beside the figures: on a shared machine they mean little without it.
 */
import http from 'node:http'
import { rmSync, statSync, writeFileSync } from 'node:fs'
import { cpus, loadavg, totalmem } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { performance } from 'node:perf_hooks'
import Database from 'better-sqlite3'
import { stringify } from 'yaml'
import { loadConfig } from '../../src/main/config/load'
import { ensureReportZone } from '../../src/main/dashboard/rollup/report-build'
import { TIERS } from '../../src/main/dashboard/rollup/schema'
import { RollupWriter } from '../../src/main/dashboard/rollup/writer'
import { MONEY } from '../../src/main/dashboard/sql'
import { openDatabase } from '../../src/main/ledger/db'
import { Ledger } from '../../src/main/ledger/ledger'
import type { CallRecord } from '../../src/main/ledger/record'
import { silentLogger } from '../../src/main/log'
import { createBurnrate } from '../../src/main/server/server'
import { IDLE_MAIN_ROWS, IDLE_THREAD_MIN_ROWS, MAIN_ROWS, SHARE_MAX_ROWS, THREAD_MIN_ROWS, exportThreadCount, useExportThread } from '../../src/main/dashboard/export-thread'
import { buildLedger, streamCalls } from './ledger-data'
import { row } from './report'

/** `--calls 10m`, `--calls 2500000`, or BENCH_CALLS. */
function callsOption(): number {
  const i = process.argv.indexOf('--calls')
  const v = (i > 0 ? process.argv[i + 1] : process.env.BENCH_CALLS) ?? '1m'
  const m = /^(\d+(?:\.\d+)?)([km]?)$/i.exec(v.replace(/_/g, ''))
  if (!m) throw new Error(`--calls: expected a number such as 1000000 or 10m, got ${v}`)
  return Math.round(Number(m[1]) * (m[2].toLowerCase() === 'm' ? 1e6 : m[2].toLowerCase() === 'k' ? 1e3 : 1))
}

const CALLS = callsOption()
const REPS = Number(process.env.BENCH_REPS ?? (CALLS > 2_000_000 ? 100 : 200))
const ROUNDS = 10
const TZ = 'Europe/Berlin'
const P95_TARGET_MS = 50
const EXPORT_TARGET_ROWS_S = 200_000
/** The built export thread (`npm run bench` builds first), as the headless server (out/main/cli.js) uses it. */
const EXPORT_WORKER = resolve(dirname(fileURLToPath(import.meta.url)), '../../out/main/export-worker.js')

function log(line: string): void {
  process.stderr.write(`${line}\n`)
}

/** The rollups against the calls: totals per tenant, and per grouping, in every table, must agree. */
function verifyRollups(db: Database.Database): string[] {
  const problems: string[] = []
  const close = (a: number, b: number) => Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(b))
  const raw = db.prepare(`SELECT tenant, count(*) n, total(${MONEY}) c, total(input_tokens) i, total(latency_ms) l FROM calls GROUP BY tenant`).all() as any[]
  for (const table of ['dash_5m', ...TIERS.map((t) => t.totals)]) {
    const lat = table === 'dash_5m' ? '0' : 'total(latency_ms)'
    const got = new Map((db.prepare(`SELECT tenant, total(requests) n, total(cost_usd) c, total(input_tokens) i, ${lat} l FROM ${table} GROUP BY tenant`).all() as any[]).map((r) => [r.tenant, r]))
    for (const r of raw) {
      const g = got.get(r.tenant)
      if (!g || g.n !== r.n || !close(g.c, r.c) || g.i !== r.i || (table !== 'dash_5m' && !close(g.l, r.l))) problems.push(`${table} differs for tenant ${r.tenant}`)
    }
  }
  for (const [dim, col] of [['model', 'model'], ['provider', 'provider'], ['agent', 'agent'], ['session', 'session'], ['api_key', 'api_key_hash'], ['project', 'project']]) {
    const want = new Map((db.prepare(`SELECT ${col} k, count(*) n, total(${MONEY}) c FROM calls GROUP BY ${col}`).all() as any[]).map((r) => [r.k, r]))
    for (const { dims } of TIERS) {
      const got = db.prepare(`SELECT key k, total(requests) n, total(cost_usd) c FROM ${dims} WHERE dim = ? GROUP BY key`).all(dim) as any[]
      if (got.length !== want.size) problems.push(`${dims} ${dim}: ${got.length} keys, calls have ${want.size}`)
      for (const g of got) {
        const w = want.get(g.k)
        if (!w || w.n !== g.n || !close(w.c, g.c)) problems.push(`${dims} ${dim} differs for ${g.k}`)
      }
    }
  }
  // The report rollup sums every call's cost (subscription calls' too), per grouping.
  // (Rows of a dim starting with '*' are across tenants.)
  const reportDims = [['', 'tenant', 'tenant'], ['agent', 'key', 'agent'], ['project', 'key', 'project'], ['session', 'key', 'session'], ['*', 'model', 'model'], ['*agent', 'key', 'agent'], ['*project', 'key', 'project']]
  for (const [dim, by, col] of reportDims) {
    const want = new Map((db.prepare(`SELECT ${col} k, count(*) n, total(cost_usd) c, sum(source = 'import') i FROM calls GROUP BY ${col}`).all() as any[]).map((r) => [r.k, r]))
    for (const table of ['dash_report_day', 'dash_report_month']) {
      const got = db.prepare(`SELECT ${by} k, total(requests) n, total(cost_usd) c, total(imported) i FROM ${table} WHERE dim = ? GROUP BY 1`).all(dim) as any[]
      if (got.length !== want.size) problems.push(`${table} ${dim} by ${by}: ${got.length} keys, calls have ${want.size}`)
      for (const g of got) {
        const w = want.get(g.k)
        if (!w || w.n !== g.n || w.i !== g.i || !close(w.c, g.c)) problems.push(`${table} ${dim} by ${by} differs for ${g.k}`)
      }
    }
  }
  // The report rollup's session totals: each session's cost, and times that hold its calls (exact,
  // but for sessions migration 14 bounded by their days), per tenant and across tenants.
  for (const [across, by] of [[0, 'tenant'], [1, "''"]] as const) {
    const want = db.prepare(`SELECT ${by} t, session s, min(ts) f, max(ts) l, total(cost_usd) c FROM calls GROUP BY 1, 2 ORDER BY 1, 2`).all() as any[]
    const got = db.prepare('SELECT tenant t, session s, first_ts f, last_ts l, cost_usd c FROM dash_report_session WHERE across = ? ORDER BY 1, 2').all(across) as any[]
    if (got.length !== want.length) problems.push(`dash_report_session across ${across}: ${got.length} sessions, calls have ${want.length}`)
    else for (const [i, w] of want.entries()) {
      const g = got[i]
      if (g.t !== w.t || g.s !== w.s || g.f > w.f || g.l < w.l || !close(g.c, w.c)) problems.push(`dash_report_session across ${across} differs for ${w.t} ${w.s}`)
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
      ensureReportZone(db, TZ)
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
    for (const f of ['', '-wal', '-shm']) rmSync(join(dir, name + f), { force: true })
    return us
  }
  time(true, 'warm.db')
  return { without: time(false, 'plain.db'), withRollups: time(true, 'rollups.db') }
}

/** The database's size per million calls: the file, and what the calls, their indexes and the rollups take in it. */
function sizes(file: string, calls: number): { total: number; parts: [string, number][] } {
  const db = new Database(file, { readonly: true })
  try {
    const rows = db.prepare(`SELECT name, sum(pgsize) AS bytes FROM dbstat GROUP BY name`).all() as { name: string; bytes: number }[]
    const idx = new Set(db.prepare(`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'calls'`).pluck().all() as string[])
    const parts = new Map<string, number>()
    const add = (k: string, b: number) => parts.set(k, (parts.get(k) ?? 0) + b)
    for (const r of rows) {
      if (r.name === 'calls') add('calls (rows)', r.bytes)
      else if (idx.has(r.name)) add(`index ${r.name}`, r.bytes)
      else if (r.name.startsWith('dash_') || r.name.startsWith('sqlite_autoindex_dash_')) add('rollups (dash_*)', r.bytes)
      else add('other tables', r.bytes)
    }
    const per = 1e6 / calls
    // Pages in use (a file that shrank by a migration keeps its free pages until VACUUM).
    const used = rows.reduce((n, r) => n + r.bytes, 0)
    return { total: used * per, parts: [...parts].map(([k, b]) => [k, b * per] as [string, number]).sort((a, b) => b[1] - a[1]) }
  } finally {
    db.close()
  }
}

const MiB = 2 ** 20

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

const n = (x: number) => x.toLocaleString('en-US')
const pct = (sorted: number[], p: number) => sorted[Math.max(1, Math.ceil(p * sorted.length)) - 1]

export async function runDashboardBench(): Promise<void> {
  const c = cpus()
  log(`dashboard bench, ${CALLS.toLocaleString('en-US')} calls, on ${c.length} x ${c[0]?.model?.trim()}, ${(totalmem() / 2 ** 30).toFixed(1)} GiB RAM, Node ${process.version}`)
  let failed = false
  let t0: number
  const built = buildLedger(CALLS, TZ, log)
  const shape = built.shape
  log(
    `${built.reused ? 'reused the cached' : `built in ${built.buildS.toFixed(0)} s a`} ledger of ${shape.calls.toLocaleString('en-US')} calls, ${shape.sessions.toLocaleString('en-US')} sessions, ` +
      `${shape.tenants} tenants, ${shape.keys} API keys, ${shape.models} models, ${shape.projects} projects, ${new Date(shape.first).toISOString().slice(0, 10)} to ${new Date(shape.last).toISOString().slice(0, 10)} (${built.file})`,
  )
  if (!built.reused || process.env.BENCH_VERIFY === '1') {
    const db = new Database(built.file, { readonly: true })
    t0 = performance.now()
    const problems = verifyRollups(db)
    if (problems.length) {
      failed = true
      log(`ROLLUPS DISAGREE WITH CALLS:\n  ${problems.slice(0, 20).join('\n  ')}`)
    } else log(`rollups equal the raw sums (per tenant in the 5-minute, hour and day tables, per grouping in the hour and day tables, per session, per tenant and grouping, and across tenants, in the report rollup's days and months, and its session totals), checked in ${((performance.now() - t0) / 1000).toFixed(0)} s`)
    const tables = ['dash_5m', ...TIERS.flatMap((t) => [t.totals, t.dims]), 'dash_session']
    log(`rollup rows: ${tables.map((n) => `${n} ${(db.prepare(`SELECT count(*) FROM ${n}`).pluck().get() as number).toLocaleString('en-US')}`).join(', ')}`)
    db.close()
    const sample: CallRecord[] = []
    streamCalls(20_000, 1, Date.now(), (calls) => sample.push(...calls))
    const cost = batchWriteCost(built.dir, sample)
    log(`ledger batch writer (batches of 50): ${cost.without.toFixed(1)} µs/call without rollups, ${cost.withRollups.toFixed(1)} µs/call with them (off the request path)`)
  }
  // BENCH_ONLY / BENCH_SKIP: a regular expression of endpoints to time (or to leave out); `size` and `export` name those parts.
  const only = process.env.BENCH_ONLY ? new RegExp(process.env.BENCH_ONLY) : null
  const skip = process.env.BENCH_SKIP ? new RegExp(process.env.BENCH_SKIP) : null
  const chosen = (name: string) => (!only || only.test(name)) && !(skip && skip.test(name))
  if (chosen('size')) {
    // Reads every page of the file (dbstat): minutes at 10M calls.
    const size = sizes(built.file, shape.calls)
    log(`\ndatabase size per million calls: ${(size.total / MiB).toFixed(0)} MiB in use (file ${(statSync(built.file).size / MiB).toFixed(0)} MiB for ${shape.calls.toLocaleString('en-US')} calls)`)
    for (const [k, b] of size.parts) if (b >= 0.5 * MiB) log(`  ${k.padEnd(30)} ${(b / MiB).toFixed(1).padStart(7)} MiB`)
  }

  const configFile = join(built.dir, 'config.yaml')
  writeFileSync(configFile, stringify({ server: { host: '127.0.0.1', port: 0 }, timezone: TZ, pricing: { auto_update: false } }))
  t0 = performance.now()
  const server = createBurnrate(loadConfig({ config: configFile, dataDir: built.dir }, {}), { log: silentLogger, exportWorker: EXPORT_WORKER })
  const url = await server.listen()
  log(`server started on the ledger in ${(performance.now() - t0).toFixed(0)} ms`)
  // BENCH_EXPORT_THREADS: threads per export other than this machine's (one core is left to the main thread, at most two).
  if (process.env.BENCH_EXPORT_THREADS) useExportThread(EXPORT_WORKER, { threads: Number(process.env.BENCH_EXPORT_THREADS) })
  try {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
    const tenant = 'tenant-2'
    const daysAgo = (n: number) => new Date(Date.now() - n * 86_400_000).toISOString().slice(0, 10)
    const month = daysAgo(30)
    let endpoints: string[] = [
      'summary', `summary?tenant=${tenant}`,
      ...['30m', '1h', '6h', '24h', '7d', '30d'].map((r) => `timeseries?range=${r}`),
      `timeseries?range=30d&tenant=${tenant}`,
      ...['model', 'provider', 'agent', 'session', 'api_key', 'tenant', 'project'].map((g) => `costs?group_by=${g}`),
      `costs?group_by=model&tenant=${tenant}`, `costs?group_by=session&range=24h`,
      'sessions', `sessions?tenant=${tenant}`,
      'expensive', 'expensive?range=30m', 'expensive?range=24h', 'expensive?range=7d', `expensive?tenant=${tenant}`, `expensive?range=1h&tenant=${tenant}`,
      'stats', 'stats?range=30m', 'stats?range=7d', 'stats?range=30d', `stats?range=30d&tenant=${tenant}`,
      'unpriced', `unpriced?tenant=${tenant}`, 'budgets',
      ...['daily', 'weekly', 'monthly', 'session', 'model', 'agent', 'project'].map((k) => `report?kind=${k}&since=${month}`),
      ...['daily', 'weekly', 'monthly', 'session', 'model', 'agent', 'project'].map((k) => `report?kind=${k}`),
      // One tenant's sessions, and a window in the past (sessions crossing both of its ends).
      `report?kind=session&tenant=${tenant}`, `report?kind=session&since=${daysAgo(120)}&until=${daysAgo(60)}`,
    ]
    endpoints = endpoints.filter(chosen)
    log(`\nendpoint latency over HTTP, ${REPS} requests each in ${ROUNDS} interleaved rounds (ms); load average before: ${loadavg().map((x) => x.toFixed(1)).join(' ')}`)
    for (const e of endpoints) for (let i = 0; i < 3; i++) await get(agent, `${url}/api/dashboard/${e}`)
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
    log(`${'endpoint'.padEnd(48)} ${'p50'.padStart(7)} ${'p95'.padStart(7)} ${'max'.padStart(7)} ${'goal p95'.padStart(9)}  bytes`)
    for (const e of endpoints) {
      const ts = times.get(e)!.sort((a, b) => a - b)
      const p95 = pct(ts, 0.95)
      if (p95 > P95_TARGET_MS) failed = true
      log(`${('/' + e).padEnd(48)} ${pct(ts, 0.5).toFixed(2).padStart(7)} ${p95.toFixed(2).padStart(7)} ${ts[ts.length - 1].toFixed(2).padStart(7)} ${('<= ' + P95_TARGET_MS).padStart(9)}  ${bytes.get(e)}${p95 > P95_TARGET_MS ? '  OVER GOAL' : ''}`)
    }
    log(`load average after: ${loadavg().map((x) => x.toFixed(1)).join(' ')}`)
    log(
      `\nexport (every call of the window, streamed, on ${exportThreadCount()} export thread(s) after the first ${n(MAIN_ROWS)} calls, for ${n(THREAD_MIN_ROWS)} calls or more; after ${n(IDLE_MAIN_ROWS)}, for ${n(IDLE_THREAD_MIN_ROWS)} or more, with a thread idle from an export before, and after half of them below ${n(SHARE_MAX_ROWS)}), against reading the same rows ` +
        `from SQLite alone (baseline, better-sqlite3 objects); CPU is this process's, every thread, the HTTP client's too; load average before: ${loadavg().map((x) => x.toFixed(1)).join(' ')}`,
    )
    const ro = new Database(built.file, { readonly: true })
    for (const e of ['export?format=csv&range=30d', 'export?format=json&range=30d', `export?format=csv&range=30d&tenant=${tenant}`].filter(chosen)) {
      // The export's window ends now and holds the calls stamped after it (the ledger holds calls up
      // to a day ahead): the baseline reads, and the rate counts, the calls of the same window.
      const since = Date.now() - 30 * 86_400_000
      const where = `ts >= ? AND ts < ?${e.includes('tenant') ? ` AND tenant = '${tenant}'` : ''}`
      let s = performance.now()
      let read = 0
      for (const _ of ro.prepare(`SELECT * FROM calls WHERE ${where} ORDER BY ts, id`).iterate(since, Number.MAX_SAFE_INTEGER)) read++
      const baseRate = read / ((performance.now() - s) / 1000)
      s = performance.now()
      const cpu0 = process.cpuUsage()
      const end = Date.now() + 1
      const r = await get(agent, `${url}/api/dashboard/${e}`)
      const secs = (performance.now() - s) / 1000
      const cpu = process.cpuUsage(cpu0)
      const rows = ro.prepare(`SELECT count(*) FROM calls WHERE ${where}`).pluck().get(end - 1 - 30 * 86_400_000, Number.MAX_SAFE_INTEGER) as number
      const cpuPerCall = (cpu.user + cpu.system) / rows
      const rate = rows / secs
      if (r.status !== 200) throw new Error(`${e} answered ${r.status}`)
      if (rate < EXPORT_TARGET_ROWS_S) failed = true
      log(
        `${('/' + e).padEnd(48)} ${rows.toLocaleString('en-US')} calls, ${(r.bytes / MiB).toFixed(0)} MiB in ${secs.toFixed(2)} s: ${Math.round(rate).toLocaleString('en-US')} calls/s ` +
          `(goal >= ${EXPORT_TARGET_ROWS_S.toLocaleString('en-US')}; SQLite read alone ${Math.round(baseRate).toLocaleString('en-US')}/s, ${(rate / baseRate).toFixed(2)}x; CPU ${cpuPerCall.toFixed(1)} µs/call)${rate < EXPORT_TARGET_ROWS_S ? '  UNDER GOAL' : ''}`,
      )
      row(`dashboard ${CALLS / 1e6}M: ${e.replace('export?', 'export ')}`, rate, baseRate, `>= ${EXPORT_TARGET_ROWS_S}`, 'calls/s')
    }
    ro.close()
    agent.destroy()
  } finally {
    await server.close()
  }
  log(`\ngoals: every endpoint p95 <= ${P95_TARGET_MS} ms, export >= ${EXPORT_TARGET_ROWS_S.toLocaleString('en-US')} calls/s: ${failed ? 'NOT MET' : 'met'}`)
  if (failed) process.exitCode = 1
}
