/**
 * `npm run bench cardinality`: does an open dashboard slow proxied calls down when the ledger
 * holds 100,000 distinct sessions? Seeds a fresh ledger with 100,000 calls in the last 24 hours,
 * each in its own session (rollups built from them, as start-up does), starts the mock upstream
 * and Burnrate as built (out/main/cli.js) on that ledger, each in its own process, then measures
 * a non-streaming proxied call's added latency (p50/p99 at 1 connection, minus calling the mock
 * directly) with nobody polling and with a dashboard poller that loads every section the page
 * loads (summary, timeseries, costs by session with the page's default limit, costs by provider
 * and by API key, sessions, expensive, stats, budgets, alerts, concurrently as the page does)
 * every 1-2 s. The three (direct, quiet, polled) run in interleaved rounds so a burst of load
 * from elsewhere is spread over all of them. About 30 s in all; BENCH_SCALE=<n> measures n times as long.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import { loadavg, tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { performance, type RecordableHistogram } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { stringify } from 'yaml'
import { DB_FILE } from '../../src/main/config/paths'
import { RollupWriter } from '../../src/main/dashboard/rollup/writer'
import { openDatabase } from '../../src/main/ledger/db'
import { LIST_LIMIT_DEFAULT } from '../../src/shared/api'
import { type Child, startChild } from './proxy-kit/child'
import { runLoad } from './proxy-kit/load'
import { describeMachine } from './proxy-kit/machine'
import { SCENARIOS } from './proxy-kit/scenarios'

const HERE = dirname(fileURLToPath(import.meta.url))
const ROOT = resolve(HERE, '../..')
const KIT = join(HERE, 'proxy-kit')

const SESSIONS = 100_000
const ROUNDS = 6
const RANGE = '24h'

function log(line: string): void {
  process.stderr.write(`${line}\n`)
}

const load = () => loadavg().map((x) => x.toFixed(1)).join(' ')

/** 100,000 calls over the last 24 hours, each in its own session, straight into the ledger; then the rollups. */
function seed(dataDir: string): void {
  const db = openDatabase(join(dataDir, DB_FILE))
  const cols = [
    'ts', 'provider', 'model', 'endpoint', 'api_key_hash', 'key_hint', 'tenant', 'agent', 'session', 'status', 'streamed',
    'input_tokens', 'output_tokens', 'cache_read_tokens', 'cache_write_tokens', 'cache_write_1h_tokens', 'reasoning_tokens',
    'cost_usd', 'priced', 'estimated', 'latency_ms', 'error',
  ]
  const insert = db.prepare(`INSERT INTO calls (${cols.join(', ')}) VALUES (${cols.map(() => '?').join(', ')})`)
  const now = Date.now()
  const span = 23 * 3_600_000
  db.transaction(() => {
    for (let i = 0; i < SESSIONS; i++) {
      insert.run([
        now - span + Math.floor((i * span) / SESSIONS), 'openai', 'gpt-4o-mini', 'chat.completions', 'a'.repeat(63) + (i % 8),
        `sk-…000${i % 8}`, `tenant-${i % 5}`, `agent-${i % 50}`, `sess-${i}`, 200, 0,
        100 + (i % 900), 50 + (i % 400), 0, 0, 0, 0, 0.001 + (i % 997) * 1e-6, 1, 0, 100 + (i % 2000), null,
      ])
    }
  })()
  new RollupWriter(db).catchUp()
  db.pragma('wal_checkpoint(TRUNCATE)')
  db.close()
}

/** Every section the dashboard page loads, with the page's defaults (grouped by session). */
const PAGE = [
  'summary',
  `timeseries?range=${RANGE}`,
  `costs?group_by=session&range=${RANGE}&limit=${LIST_LIMIT_DEFAULT}`,
  `costs?group_by=provider&range=${RANGE}`,
  `costs?group_by=api_key&range=${RANGE}`,
  `sessions?limit=${LIST_LIMIT_DEFAULT}`,
  `expensive?range=${RANGE}&limit=10`,
  `stats?range=${RANGE}`,
  'budgets',
  'alerts',
]

function get(agent: http.Agent, url: string): Promise<{ status: number; bytes: number; ms: number }> {
  const t0 = performance.now()
  return new Promise((resolve) => {
    http
      .get(url, { agent }, (res) => {
        let bytes = 0
        res.on('data', (c: Buffer) => (bytes += c.length))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, bytes, ms: performance.now() - t0 }))
        res.on('error', () => resolve({ status: 0, bytes, ms: 0 }))
      })
      .on('error', () => resolve({ status: 0, bytes: 0, ms: 0 }))
  })
}

/** Slowest answer seen per page request, in ms (concurrent, so each includes waiting behind the others). */
const slowest = new Map<string, number>()

/** Loads the whole page, then waits 1-2 s, until stopped. */
function startPoller(base: string): { stop(): Promise<void>; stats(): { rounds: number; bad: number; maxBytes: number; roundMs: number[] } } {
  const agent = new http.Agent({ keepAlive: true, maxSockets: PAGE.length })
  let running = true
  let rounds = 0
  let bad = 0
  let maxBytes = 0
  const roundMs: number[] = []
  let wake: (() => void) | null = null
  const loop = (async () => {
    while (running) {
      const t0 = performance.now()
      const answers = await Promise.all(PAGE.map(async (p) => ({ path: p, ...(await get(agent, `${base}/api/dashboard/${p}`)) })))
      roundMs.push(performance.now() - t0)
      rounds++
      for (const a of answers) {
        if (a.status !== 200) bad++
        if (running) slowest.set(a.path, Math.max(slowest.get(a.path) ?? 0, a.ms))
        maxBytes = Math.max(maxBytes, a.bytes)
      }
      if (!running) break
      await new Promise<void>((r) => {
        wake = r
        setTimeout(r, 1000 + Math.random() * 1000)
      })
    }
  })()
  return {
    async stop() {
      running = false
      wake?.()
      await loop
      agent.destroy()
    },
    stats: () => ({ rounds, bad, maxBytes, roundMs }),
  }
}

type Target = 'direct' | 'quiet' | 'polled'
const TARGETS: Target[] = ['direct', 'quiet', 'polled']

export async function runCardinalityBench(): Promise<void> {
  const scale = Number(process.env.BENCH_SCALE ?? '1')
  const latencyMs = 1500 * (Number.isFinite(scale) && scale > 0 ? scale : 1)
  log(`cardinality bench on ${describeMachine()}`)
  const dataDir = mkdtempSync(join(tmpdir(), 'burnrate-card-bench-'))
  let upstream: Child | undefined
  let burnrate: Child | undefined
  let failed = false
  try {
    let t0 = performance.now()
    seed(dataDir)
    log(`seeded ${SESSIONS.toLocaleString('en-US')} calls in ${SESSIONS.toLocaleString('en-US')} distinct sessions, rollups built: ${((performance.now() - t0) / 1000).toFixed(1)} s`)
    const tsx = ['--import', 'tsx']
    upstream = await startChild('mock upstream', [...tsx, join(KIT, 'upstream.ts')])
    const configFile = join(dataDir, 'config.yaml')
    writeFileSync(
      configFile,
      stringify({
        server: { host: '127.0.0.1', port: 0 },
        timezone: 'UTC',
        providers: { openai: { base_url: `${upstream.url}/v1` }, anthropic: { base_url: upstream.url } },
        // A budget rule every bench key matches and none reaches, so each call is checked (and budgets has a row).
        budgets: { rules: [{ api_key_pattern: 'sk-*', daily_limit_usd: 1_000_000, action: 'block' }] },
      }),
    )
    t0 = performance.now()
    burnrate = await startChild('Burnrate', [join(ROOT, 'out/main/cli.js'), '--config', configFile, '--data-dir', dataDir], {}, 120_000)
    log(`Burnrate listening on the seeded ledger after ${((performance.now() - t0) / 1000).toFixed(1)} s`)

    const sc = SCENARIOS.find((s) => s.key === 'nonstream')!
    const urls: Record<Target, string> = { direct: upstream.url, quiet: burnrate.url, polled: burnrate.url }
    // One page load before measuring: the answers must be whole and small.
    const probe = startPoller(burnrate.url)
    log('  warming up')
    for (const t of ['direct', 'quiet'] as const) await runLoad(urls[t], sc.call, 1, 1000)
    await probe.stop()
    slowest.clear()
    const first = probe.stats()
    if (first.bad > 0) throw new Error(`the dashboard answered ${first.bad} of ${PAGE.length} page requests with an error`)

    const hist = {} as Record<Target, RecordableHistogram>
    const errors: Record<Target, number> = { direct: 0, quiet: 0, polled: 0 }
    const calls: Record<Target, number> = { direct: 0, quiet: 0, polled: 0 }
    const cpu: Record<'quiet' | 'polled', { us: number; ms: number }> = { quiet: { us: 0, ms: 0 }, polled: { us: 0, ms: 0 } }
    const pollers: ReturnType<typeof startPoller>[] = []
    log(`load average before: ${load()}`)
    for (let round = 0; round < ROUNDS; round++) {
      log(`  latency at 1 connection, round ${round + 1}/${ROUNDS}`)
      const k = round % TARGETS.length
      for (const t of [...TARGETS.slice(k), ...TARGETS.slice(0, k)]) {
        const poller = t === 'polled' ? startPoller(burnrate.url) : null
        const c0 = burnrate.cpuMicros()
        const r = await runLoad(urls[t], sc.call, 1, latencyMs)
        const c1 = burnrate.cpuMicros()
        if (poller) {
          await poller.stop()
          pollers.push(poller)
        }
        if (t !== 'direct' && c0 !== null && c1 !== null) {
          cpu[t].us += c1 - c0
          cpu[t].ms += r.elapsedMs
        }
        if (hist[t]) hist[t].add(r.latency)
        else hist[t] = r.latency
        errors[t] += r.errors
        calls[t] += r.ok
      }
    }
    log(`load average after: ${load()}`)
    const polls = pollers.map((p) => p.stats())
    const pageLoads = polls.reduce((s, p) => s + p.rounds, 0)
    const pollErrors = polls.reduce((s, p) => s + p.bad, 0)
    const maxBytes = Math.max(first.maxBytes, ...polls.map((p) => p.maxBytes))
    const roundMs = polls.flatMap((p) => p.roundMs).sort((a, b) => a - b)
    if (pollErrors > 0 || Object.values(errors).some((e) => e > 0)) failed = true

    const ms = (t: Target, p: number) => hist[t].percentile(p) / 1e6
    const added = (t: Target, p: number) => ms(t, p) - ms('direct', p)
    const rows: string[] = []
    for (const t of ['quiet', 'polled'] as const) {
      const label = t === 'quiet' ? 'nobody polling' : 'dashboard polling every 1-2 s'
      const cpuPct = cpu[t].ms > 0 ? `${((cpu[t].us / 1000 / cpu[t].ms) * 100).toFixed(0)}%` : '-'
      rows.push(
        `| ${label} | +${added(t, 50).toFixed(3)} | +${added(t, 99).toFixed(3)} | +${added(t, 99.9).toFixed(3)} | ${(hist[t].max / 1e6).toFixed(1)} | ` +
          `${(hist[t].mean / 1e6).toFixed(3)} | ${calls[t].toLocaleString('en-US')} | ${errors[t]} | ${cpuPct} |`,
      )
    }
    const ratio = (p: number) => (added('polled', p) / added('quiet', p)).toFixed(2)
    const out = [
      '## Cardinality benchmark',
      '',
      `Machine: ${describeMachine()}; load average ${load()}.`,
      `Ledger: ${SESSIONS.toLocaleString('en-US')} calls in ${SESSIONS.toLocaleString('en-US')} distinct sessions over the last 24 hours. ` +
        `Non-streaming call (${sc.call.body.length} B request), ${ROUNDS} x ${latencyMs / 1000} s per target at 1 connection, interleaved; ` +
        `"added" = minus calling the mock directly (direct p50 ${ms('direct', 50).toFixed(3)} ms, p99 ${ms('direct', 99).toFixed(3)} ms).`,
      '',
      '| Burnrate, 100k sessions | added p50 ms | added p99 ms | added p99.9 ms | max ms | mean ms | calls | errors | Burnrate CPU |',
      '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
      ...rows,
      '',
      `Polled vs quiet (added latency): p50 ${ratio(50)}x, p99 ${ratio(99)}x, p99.9 ${ratio(99.9)}x.`,
      `Poller: ${pageLoads} page loads of ${PAGE.length} requests each (${pollErrors} errors); largest answer ${(maxBytes / 1024).toFixed(0)} KB; ` +
        `a whole page load took p50 ${roundMs.length ? roundMs[Math.floor(roundMs.length / 2)].toFixed(0) : '-'} ms, max ${roundMs.length ? roundMs[roundMs.length - 1].toFixed(0) : '-'} ms.`,
      `Slowest answer per request (sent together, as the page does): ${PAGE.map((p) => `${p} ${(slowest.get(p) ?? 0).toFixed(0)}`).join(', ')} ms.`,
    ]
    process.stdout.write(`\n${out.join('\n')}\n`)
  } finally {
    const code = await burnrate?.stop()
    await upstream?.stop()
    if (burnrate && code !== 0) {
      failed = true
      log(`Burnrate exited with ${code} on SIGTERM`)
    }
    rmSync(dataDir, { recursive: true, force: true })
  }
  if (failed) process.exitCode = 1
}
