/**
 * `npm run soak`: the load and fault scenarios against the built server, with figures.
 *   load     200 concurrent streaming calls for 60 s plus a dashboard poller
 *   faults   the load where a tenth of the calls each are reset mid-stream, stall, get a 529,
 *            or are hung up on by the client: every call must still be recorded once
 *   locked   the same load while another process holds the database locked for 5 s
 *   sigkill  the load, then SIGKILL: calls finished 100 ms before the kill vs calls on disk
 * Prints calls completed / recorded / lost, peak memory, memory after GC, p99 added latency.
 * Options: --duration <s> (default 60), --concurrency <n> (default 200), --chunk-ms <n> (the
 * upstream's pause between stream events, default 25), and scenario names to run only those.
 */
// First: everything below, and every process it starts, runs with a temp home (./home.ts).
import './home'
import { parseArgs } from 'node:util'
import {
  addedLatencies,
  type BuiltServer,
  faultMix,
  findKeysInFiles,
  loadFixtures,
  lockFromAnotherProcess,
  makeKeys,
  percentile,
  readLedger,
  runLoad,
  startBuiltServer,
  startLoadUpstream,
  statusCounts,
} from '../load/harness'

const { values, positionals } = parseArgs({
  options: {
    duration: { type: 'string', default: '60' },
    concurrency: { type: 'string', default: '200' },
    'chunk-ms': { type: 'string', default: '25' },
  },
  allowPositionals: true,
})
const DURATION = Number(values.duration) * 1000
const CONCURRENCY = Number(values.concurrency)
const scenarios = positionals.length ? positionals : ['load', 'faults', 'locked', 'sigkill']
const fixtures = loadFixtures()
const mb = (b: number | null) => (b === null ? 'n/a' : `${(b / 1024 / 1024).toFixed(1)} MB`)
const ms = (x: number) => `${x.toFixed(2)} ms`
const DASHBOARD = ['/api/dashboard/summary', '/api/dashboard/timeseries?range=1h', '/api/dashboard/costs?group_by=model&range=24h', '/api/health']

async function settle(server: BuiltServer, prefix: string, expected: number): Promise<number> {
  const end = Date.now() + 15_000
  for (;;) {
    const n = readLedger(server.dbFile, prefix).count
    if (n >= expected || Date.now() > end) return n
    await new Promise((r) => setTimeout(r, 100))
  }
}

function table(rows: [string, string][]): void {
  const w = Math.max(...rows.map((r) => r[0].length))
  for (const [k, v] of rows) console.log(`  ${k.padEnd(w)}  ${v}`)
}

const CHUNK_MS = Number(values['chunk-ms'])
const upstream = await startLoadUpstream(fixtures, CHUNK_MS)
console.log(`fixtures: ${fixtures.map((f) => `${f.name} (${f.chunks.length} events, ${CHUNK_MS} ms apart)`).join(', ')}; loopback only`)
let failures = 0
try {
  if (scenarios.includes('load')) {
    console.log(`\nload: ${CONCURRENCY} concurrent streaming calls for ${DURATION / 1000} s, dashboard polled every 250 ms`)
    const keys = makeKeys(20, 'soak')
    const server = await startBuiltServer({}, upstream.url)
    await runLoad({ url: server.url, fixtures, concurrency: 20, durationMs: 2000, keys, idPrefix: 'warm' })
    const start = await server.probe()
    const r = await runLoad({ url: server.url, fixtures, concurrency: CONCURRENCY, durationMs: DURATION, keys, idPrefix: 'soak', poll: { paths: DASHBOARD, everyMs: 250 } })
    const recorded = await settle(server, 'soak-', r.completed.length)
    await new Promise((res) => setTimeout(res, 1000))
    const end = await server.probe()
    const ledger = readLedger(server.dbFile, 'soak-')
    const expected = r.completed.reduce((s, c) => s + fixtures.find((f) => f.name === c.fixture)!.costUsd, 0)
    const added = addedLatencies(r.completed, upstream.timings)
    const peak = server.peakRss()
    await server.stop()
    const leaked = findKeysInFiles([server.dbFile, `${server.dbFile}-wal`, server.logFile], keys)
    await server.dispose()
    const lost = r.completed.filter((c) => !ledger.sessions.has(c.id)).length
    if (lost || r.failed.length || leaked.length || Math.abs(ledger.costUsd - expected) > expected * 1e-9) failures++
    table([
      ['calls completed', String(r.completed.length)],
      ['calls failed', String(r.failed.length)],
      ['calls recorded', String(recorded)],
      ['calls lost', String(lost)],
      ['throughput', `${(r.completed.length / (DURATION / 1000)).toFixed(0)} calls/s`],
      ['recorded cost', `$${ledger.costUsd.toFixed(6)} (fixtures sum $${expected.toFixed(6)})`],
      ['added latency p50 / p99', `${ms(percentile(added, 50))} / ${ms(percentile(added, 99))} (time to first byte)`],
      ['dashboard polls', `${r.polls.length}, non-200: ${r.polls.filter((p) => p.status !== 200).length}, p99 ${ms(percentile(r.polls.map((p) => p.ms), 99))}`],
      ['peak memory (RSS)', mb(peak)],
      ['heap after GC, start / end', `${mb(start.heapUsed)} / ${mb(end.heapUsed)}`],
      ['RSS after GC, start / end', `${mb(start.rss)} / ${mb(end.rss)}`],
      ['raw keys in DB, WAL, log', String(leaked.length)],
    ])
  }

  if (scenarios.includes('faults')) {
    const secs = Math.min(DURATION / 1000, 20)
    console.log(`\nfaults: ${CONCURRENCY} concurrent calls for ${secs} s; a tenth each reset mid-stream, stalled, 529, hung up by the client`)
    const faulty = await startLoadUpstream(fixtures, CHUNK_MS, (id) => faultMix(id).upstream)
    try {
      const server = await startBuiltServer({ upstream: { idle_timeout_ms: 1000 } }, faulty.url)
      const r = await runLoad({ url: server.url, fixtures, concurrency: CONCURRENCY, durationMs: secs * 1000, keys: makeKeys(4, 'faults'), idPrefix: 'faults', hangUp: (id) => faultMix(id).hangUp })
      const recorded = await settle(server, 'faults-', r.calls.length)
      const ledger = readLedger(server.dbFile, 'faults-')
      const lost = r.calls.filter((c) => !ledger.sessions.has(c.id)).length
      const byStatus = statusCounts(server.dbFile, 'faults-')
      const peak = server.peakRss()
      await server.stop()
      await server.dispose()
      if (lost || recorded !== r.calls.length) failures++
      table([
        ['calls sent', String(r.calls.length)],
        ['calls completed whole', String(r.completed.length)],
        ['calls recorded', String(recorded)],
        ['calls lost', String(lost)],
        ['recorded by status', Object.entries(byStatus).map(([k, v]) => `${k}: ${v}`).join(', ')],
        ['peak memory (RSS)', mb(peak)],
      ])
    } finally {
      await faulty.close()
    }
  }

  if (scenarios.includes('locked')) {
    const secs = Math.min(DURATION / 1000, 20)
    console.log(`\nlocked: ${CONCURRENCY} concurrent calls for ${secs} s; another process locks the database for 5 s of it`)
    const server = await startBuiltServer({}, upstream.url)
    const load = runLoad({ url: server.url, fixtures, concurrency: CONCURRENCY, durationMs: secs * 1000, keys: makeKeys(4, 'lock'), idPrefix: 'locked' })
    await new Promise((res) => setTimeout(res, Math.min(2000, secs * 200)))
    const lock = await lockFromAnotherProcess(server.dbFile)
    const health = async () => (await fetch(`${server.url}/api/health`)).json()
    await new Promise((res) => setTimeout(res, 2500))
    const during = await health()
    await new Promise((res) => setTimeout(res, 2500))
    await lock.release()
    const r = await load
    const recorded = await settle(server, 'locked-', r.completed.length)
    const ledger = readLedger(server.dbFile, 'locked-')
    const lost = r.completed.filter((c) => !ledger.sessions.has(c.id)).length
    const peak = server.peakRss()
    const after = await health()
    await server.stop()
    await server.dispose()
    if (lost || r.failed.length) failures++
    table([
      ['calls completed', String(r.completed.length)],
      ['calls failed', String(r.failed.length)],
      ['calls recorded', String(recorded)],
      ['calls lost', String(lost)],
      ['health while locked', `${during.status}, ${during.ledger.pending} held in memory`],
      ['health after', `${after.status}, ${after.ledger.pending} held, ${after.ledger.dropped} dropped`],
      ['peak memory (RSS)', mb(peak)],
    ])
  }

  if (scenarios.includes('sigkill')) {
    console.log(`\nsigkill: ${CONCURRENCY} concurrent calls, SIGKILL after 5 s, five times`)
    let mustHave = 0
    let lostTotal = 0
    let onDisk = 0
    let integrity = 'ok'
    for (let round = 0; round < 5; round++) {
      const server = await startBuiltServer({}, upstream.url)
      let stop = false
      const load = runLoad({ url: server.url, fixtures, concurrency: CONCURRENCY, durationMs: 60_000, keys: makeKeys(4, 'kill'), idPrefix: `kill${round}`, stop: () => stop })
      await new Promise((res) => setTimeout(res, 5000 + round * 137))
      const killedAt = Date.now()
      await server.kill('SIGKILL')
      stop = true
      const r = await load
      const ledger = readLedger(server.dbFile)
      await server.dispose()
      if (ledger.integrity !== 'ok') integrity = ledger.integrity
      const need = r.completed.filter((c) => c.endedAt < killedAt - 100)
      mustHave += need.length
      onDisk += ledger.count
      lostTotal += need.filter((c) => !ledger.sessions.has(c.id)).length
    }
    if (lostTotal || integrity !== 'ok') failures++
    table([
      ['calls finished > 100 ms before a kill', String(mustHave)],
      ['calls on disk after the kills', String(onDisk)],
      ['calls lost', String(lostTotal)],
      ['integrity_check', integrity],
    ])
  }
} finally {
  await upstream.close()
}
if (failures) {
  console.log(`\n${failures} scenario(s) lost calls or failed; see above`)
  process.exitCode = 1
}
