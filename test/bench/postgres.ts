/**
 * `npm run bench postgres`: team scale. Two Burnrates on one PostgreSQL (`storage.url`) against
 * one Burnrate on SQLite, every call under a `block` budget rule (a daily limit no call reaches,
 * so each call is admitted through the budget state: in process on SQLite, one UPDATE … RETURNING
 * in PostgreSQL). Each server runs as built (out/main/cli.js) in its own process, with the mock
 * upstream in another and a PostgreSQL cluster in a temp folder, all on this machine.
 *
 * - Latency at 1 connection (non-streaming call): p50/p99 of the SQLite instance and of one PG
 *   instance, and the difference: the added latency of PostgreSQL mode for a call under a block rule.
 * - Throughput at 16 connections: the SQLite instance alone, then the two PG instances together
 *   (8 connections each, at the same time), in calls per second.
 * - The same PG pair without a budget rule (its own database), to tell the ledger's cost from the
 *   budget admission's.
 *
 * The targets run in interleaved rounds so a burst of load from elsewhere is spread over all of
 * them. About 40 s; BENCH_SCALE=<n> measures n times as long.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import type { RecordableHistogram } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { stringify } from 'yaml'
import { startPostgres, type TestPostgres } from '../support/postgres'
import { type Child, startChild } from './proxy-kit/child'
import { runLoad } from './proxy-kit/load'
import { describeMachine } from './proxy-kit/machine'
import { SCENARIOS } from './proxy-kit/scenarios'

const HERE = dirname(fileURLToPath(import.meta.url))
const ROOT = resolve(HERE, '../..')
const KIT = join(HERE, 'proxy-kit')
const ROUNDS = 4
const CONNECTIONS = 16

function log(line: string): void {
  process.stderr.write(`${line}\n`)
}

const load = () => loadavg().map((x) => x.toFixed(1)).join(' ')

function startBurnrate(name: string, dir: string, upstream: string, storageUrl?: string, rule = true): Promise<Child> {
  const configFile = join(dir, 'config.yaml')
  writeFileSync(
    configFile,
    stringify({
      server: { host: '127.0.0.1', port: 0 },
      timezone: 'UTC',
      pricing: { auto_update: false },
      providers: { openai: { base_url: `${upstream}/v1` }, anthropic: { base_url: upstream } },
      // Every bench key is under this block rule and none reaches it: each call is reserved and settled.
      budgets: { rules: rule ? [{ api_key_pattern: 'sk-*', daily_limit_usd: 1_000_000, action: 'block' }] : [] },
      ...(storageUrl ? { storage: { url: storageUrl } } : {}),
    }),
  )
  return startChild(name, [join(ROOT, 'out/main/cli.js'), '--config', configFile, '--data-dir', dir], {}, 120_000)
}

type Target = 'sqlite' | 'postgres' | 'norule'

export async function runPostgresBench(): Promise<void> {
  const scale = Number(process.env.BENCH_SCALE ?? '1')
  const k = Number.isFinite(scale) && scale > 0 ? scale : 1
  const latencyMs = 2000 * k
  const throughputMs = 3000 * k
  log(`postgres bench on ${describeMachine()}`)
  const dirs = [0, 1, 2, 3, 4].map(() => mkdtempSync(join(tmpdir(), 'burnrate-pg-bench-')))
  let pg: TestPostgres | undefined
  const children: Child[] = []
  let failed = false
  try {
    pg = await startPostgres()
    const url = pg.createDatabase('bench')
    const upstream = await startChild('mock upstream', ['--import', 'tsx', join(KIT, 'upstream.ts')])
    children.push(upstream)
    const lite = await startBurnrate('Burnrate (SQLite)', dirs[0], upstream.url)
    children.push(lite)
    const a = await startBurnrate('Burnrate A (PostgreSQL)', dirs[1], upstream.url, url)
    children.push(a)
    const b = await startBurnrate('Burnrate B (PostgreSQL)', dirs[2], upstream.url, url)
    children.push(b)
    // The same pair without a budget rule, on a database of its own: what the ledger alone costs.
    const url2 = pg.createDatabase('bench_norule')
    const c = await startBurnrate('Burnrate C (PostgreSQL, no rule)', dirs[3], upstream.url, url2, false)
    children.push(c)
    const d = await startBurnrate('Burnrate D (PostgreSQL, no rule)', dirs[4], upstream.url, url2, false)
    children.push(d)
    const pairs: Record<Exclude<Target, 'sqlite'>, Child[]> = { postgres: [a, b], norule: [c, d] }

    const sc = SCENARIOS.find((s) => s.key === 'nonstream')!
    log('  warming up')
    for (const x of [lite, a, b, c, d]) await runLoad(x.url, sc.call, 4, 1500)

    const hist = {} as Record<Target, RecordableHistogram>
    const calls: Record<Target, { ok: number; ms: number }> = { sqlite: { ok: 0, ms: 0 }, postgres: { ok: 0, ms: 0 }, norule: { ok: 0, ms: 0 } }
    let errors = 0
    log(`load average before: ${load()}`)
    for (let round = 0; round < ROUNDS; round++) {
      log(`  round ${round + 1}/${ROUNDS}`)
      const all: Target[] = ['sqlite', 'postgres', 'norule']
      const order = [...all.slice(round % 3), ...all.slice(0, round % 3)]
      for (const t of order) {
        const r = await runLoad(t === 'sqlite' ? lite.url : pairs[t][0].url, sc.call, 1, latencyMs)
        if (hist[t]) hist[t].add(r.latency)
        else hist[t] = r.latency
        errors += r.errors
      }
      for (const t of order) {
        if (t === 'sqlite') {
          const r = await runLoad(lite.url, sc.call, CONNECTIONS, throughputMs)
          calls.sqlite.ok += r.ok
          calls.sqlite.ms += r.elapsedMs
          errors += r.errors
        } else {
          const rs = await Promise.all(pairs[t].map((x) => runLoad(x.url, sc.call, CONNECTIONS / 2, throughputMs)))
          calls[t].ok += rs.reduce((s, r) => s + r.ok, 0)
          calls[t].ms += Math.max(...rs.map((r) => r.elapsedMs))
          errors += rs.reduce((s, r) => s + r.errors, 0)
        }
      }
    }
    log(`load average after: ${load()}`)
    if (errors > 0) failed = true
    const ms = (t: Target, p: number) => hist[t].percentile(p) / 1e6
    const rps = (t: Target) => (calls[t].ok / calls[t].ms) * 1000
    const out = [
      '## PostgreSQL benchmark',
      '',
      `Machine: ${describeMachine()}; load average ${load()}. PostgreSQL ${pg.url.replace(/\/\/.*@/, '//')} (a temp cluster on this machine, fsync off).`,
      `Non-streaming call (${sc.call.body.length} B request) under a \`block\` rule; ${ROUNDS} rounds, interleaved; ${errors} errors.`,
      '',
      '| | p50 ms | p99 ms | calls/s at 16 connections |',
      '|---|---:|---:|---:|',
      `| one Burnrate on SQLite | ${ms('sqlite', 50).toFixed(3)} | ${ms('sqlite', 99).toFixed(3)} | ${rps('sqlite').toFixed(0)} |`,
      `| two Burnrates on one PostgreSQL (latency: one of them; throughput: both together) | ${ms('postgres', 50).toFixed(3)} | ${ms('postgres', 99).toFixed(3)} | ${rps('postgres').toFixed(0)} |`,
      `| the same two without a budget rule (the ledger alone) | ${ms('norule', 50).toFixed(3)} | ${ms('norule', 99).toFixed(3)} | ${rps('norule').toFixed(0)} |`,
      '',
      `Added by PostgreSQL mode: p50 +${(ms('postgres', 50) - ms('sqlite', 50)).toFixed(3)} ms, p99 +${(ms('postgres', 99) - ms('sqlite', 99)).toFixed(3)} ms; ` +
        `throughput ${(rps('postgres') / rps('sqlite')).toFixed(2)}x. ` +
        `Of which the shared budget admission: p50 +${(ms('postgres', 50) - ms('norule', 50)).toFixed(3)} ms, throughput ${(rps('postgres') / rps('norule')).toFixed(2)}x of the pair without a rule.`,
    ]
    process.stdout.write(`\n${out.join('\n')}\n`)
  } finally {
    for (const c of children.reverse()) {
      const code = await c.stop()
      if (code !== 0 && c.name.startsWith('Burnrate')) {
        failed = true
        log(`${c.name} exited with ${code} on SIGTERM`)
      }
    }
    pg?.stop()
    for (const d of dirs) rmSync(d, { recursive: true, force: true })
  }
  if (failed) process.exitCode = 1
}
