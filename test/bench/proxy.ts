/**
 * `npm run bench proxy`: what Burnrate's hot path costs, measured against baselines in the
 * same run. Each target is its own process on 127.0.0.1: the mock upstream called directly, a
 * bare node:http pass-through proxy, a bare pass-through that forwards with undici as Burnrate does
 * (one keep-alive Pool: the floor of Burnrate's own forwarding), a minimal express +
 * http-proxy-middleware pass-through, and
 * Burnrate itself (the built headless server, out/main/cli.js, with its real SQLite ledger and
 * pricing) three times: with a budget rule every call is checked against, with none, and with
 * the rule plus Prometheus metrics (scraped every 5 s) and OTLP export (to the mock). For a
 * non-streaming and a streaming call: latency p50/p99 at 1 connection and throughput at 32
 * connections; each proxy's CPU time per call; peak memory. Afterwards each Burnrate's ledger is
 * read back to check that every call was recorded with the fixture's tokens and a price.
 *
 * Targets are measured in interleaved rounds (the order rotates each round) so that a burst of
 * load from something else on the machine is spread over all of them, not pinned on one.
 * Each target is warmed to its steady state first (see `phases`); what a freshly started
 * process does in its first seconds is reported apart ("cold").
 * BENCH_SCALE=<n> multiplies every warm-up and measuring time (default 1: about 300 s in all).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { RecordableHistogram } from 'node:perf_hooks'
import { stringify } from 'yaml'
import { type Child, type ThreadKind, startChild } from './proxy-kit/child'
import { runLoad } from './proxy-kit/load'
import { describeMachine } from './proxy-kit/machine'
import {
  BURNRATE_TARGETS,
  type BurnrateTarget,
  type Figures,
  TARGETS,
  TARGET_LABEL,
  type TargetKey,
  metricsCost,
  mib,
  scenarioTable,
  threadSplit,
  verdict,
} from './proxy-kit/report'
import { SCENARIOS, type Scenario } from './proxy-kit/scenarios'
import { checkLedger } from './proxy-kit/verify'
import { callsFor, heapPerCall } from './proxy-kit/heap'
import { row } from './report'

const HERE = dirname(fileURLToPath(import.meta.url))
const ROOT = resolve(HERE, '../..')
const KIT = join(HERE, 'proxy-kit')

const INSPECT = '--inspect=127.0.0.1:0'
/** The targets whose heap allocation per call is sampled: Burnrate with its budget rule and the two bare proxies. */
const HEAP_TARGETS = ['bare', 'bareUndici', 'burnrate'] as const
type HeapTarget = (typeof HEAP_TARGETS)[number]
/** Before sampling, each target runs the scenario this long and for at least this many calls, then is sampled for at least HEAP_CALLS (a busy machine's few calls a second would leave code unoptimized and the sample small). */
const HEAP_WARM_MS = 2000
const HEAP_WARM_CALLS = 5000
const HEAP_CALLS = 3000
const THROUGHPUT_CONNECTIONS = 32
const ROUNDS = 6

interface Phase {
  /** Warm-up at 32 connections: this many interleaved rounds of `warmRoundMs` per target. */
  warmRounds: number
  warmRoundMs: number
  /** Then at 1 connection, per target. */
  warmLatencyMs: number
  latencyMs: number
  throughputMs: number
  /** Sampling the heap at 4 connections, per target, after the timed rounds. */
  heapMs: number
}

/**
 * The warm-up brings every target to its steady state before anything is measured: a bare
 * proxy is warm within a second, but Burnrate's code (hundreds of functions on the call's path)
 * needs about 10 s at 32 connections before V8 has compiled it with its optimizing tiers (its
 * helper threads' CPU falls from 30-90 µs a call to 2-3). It is given in interleaved rounds, so
 * no Burnrate sits idle long enough (30 s) for its idle collection to shrink its heap again.
 * What the first round costs (a freshly started process) is reported apart, as "cold".
 */
function phases(): Phase {
  const scale = Number(process.env.BENCH_SCALE ?? '1')
  const s = Number.isFinite(scale) && scale > 0 ? scale : 1
  return { warmRounds: 4, warmRoundMs: 3000 * s, warmLatencyMs: 750 * s, latencyMs: 1000 * s, throughputMs: 750 * s, heapMs: 2000 * s }
}

/** The heap sampled after the timed rounds, as one line of the scenario's report. */
function heapLine(h: Record<HeapTarget, number>, heapMs: number): string {
  const b = (n: number) => `${Math.round(n).toLocaleString('en-US')} B`
  return (
    "JS heap bytes allocated per call on the event loop (V8's sampling heap profiler through the inspector, keeping what was collected; " +
    `after the timed rounds, each target ${HEAP_WARM_MS / 1000} s and at least ${HEAP_WARM_CALLS} calls on the scenario, then sampled ${heapMs / 1000} s and at least ${HEAP_CALLS} calls at 4 connections, the idle rate taken off; ` +
    `load-independent): ${HEAP_TARGETS.map((t) => `${TARGET_LABEL[t]} ${b(h[t])}`).join('; ')}.`
  )
}

function log(line: string): void {
  process.stderr.write(`${line}\n`)
}

interface Targets {
  upstream: Child
  bare: Child
  bareUndici: Child
  hpm: Child
  burnrate: Record<BurnrateTarget, { child: Child; dataDir: string }>
}

export async function startBurnrate(
  name: string,
  upstream: string,
  rules: unknown[],
  more: Record<string, unknown> = {},
  nodeArgs: string[] = [],
  cli = process.env.BENCH_CLI ?? join(ROOT, 'out/main/cli.js'),
): Promise<{ child: Child; dataDir: string }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'burnrate-bench-'))
  const configFile = join(dataDir, 'config.yaml')
  writeFileSync(
    configFile,
    stringify({
      server: { host: '127.0.0.1', port: 0 },
      timezone: 'UTC',
      providers: { openai: { base_url: `${upstream}/v1` }, anthropic: { base_url: upstream } },
      budgets: { rules },
      ...more,
    }),
  )
  // BENCH_CLI=<build>/main/cli.js runs another build (an A/B), as the start-up bench does.
  const child = await startChild(name, [...nodeArgs, cli, '--config', configFile, '--data-dir', dataDir])
  return { child, dataDir }
}

async function startTargets(): Promise<Targets> {
  const tsx = ['--import', 'tsx']
  const upstream = await startChild('mock upstream', [...tsx, join(KIT, 'upstream.ts')])
  const env = { TARGET: upstream.url }
  // A budget rule that every bench key matches and none reaches, so each call is checked.
  const rule = { api_key_pattern: 'sk-*', daily_limit_usd: 1_000_000, action: 'block' }
  const [bare, bareUndici, hpm, burnrate, burnrateOpen, burnrateMetrics] = await Promise.all([
    // With their inspector on 127.0.0.1 (idle until the heap is sampled, after the timed rounds).
    startChild('bare proxy', [INSPECT, ...tsx, join(KIT, 'bare-proxy.ts')], env),
    startChild('bare undici proxy', [INSPECT, ...tsx, join(KIT, 'bare-undici-proxy.ts')], env),
    startChild('http-proxy-middleware proxy', [...tsx, join(KIT, 'hpm-proxy.ts')], env),
    startBurnrate('Burnrate', upstream.url, [rule], {}, [INSPECT]),
    startBurnrate('Burnrate (no budget rules)', upstream.url, []),
    // The mock upstream is also the OTLP collector (it answers /v1/traces and /v1/metrics).
    startBurnrate('Burnrate (metrics and OTLP export on)', upstream.url, [rule], {
      metrics: { enabled: true },
      otel: { endpoint: upstream.url, interval_ms: 10_000 },
    }),
  ])
  return { upstream, bare, bareUndici, hpm, burnrate: { burnrate, burnrateOpen, burnrateMetrics } }
}

/** Rotates the order each round so no target always runs first (or last). */
function order(round: number): TargetKey[] {
  const k = round % TARGETS.length
  return [...TARGETS.slice(k), ...TARGETS.slice(0, k)]
}

export async function runProxyBench(): Promise<void> {
  const p = phases()
  log(`proxy bench on ${describeMachine()}`)
  const children = await startTargets()
  const b = children.burnrate
  const urls: Record<TargetKey, string> = {
    direct: children.upstream.url,
    bare: children.bare.url,
    bareUndici: children.bareUndici.url,
    hpm: children.hpm.url,
    burnrate: b.burnrate.child.url,
    burnrateOpen: b.burnrateOpen.child.url,
    burnrateMetrics: b.burnrateMetrics.child.url,
  }
  // The proxies' own processes, for their CPU time (the direct target is the mock itself: not shown).
  const procs: Partial<Record<TargetKey, Child>> = {
    bare: children.bare,
    bareUndici: children.bareUndici,
    hpm: children.hpm,
    burnrate: b.burnrate.child,
    burnrateOpen: b.burnrateOpen.child,
    burnrateMetrics: b.burnrateMetrics.child,
  }
  const sent: Record<BurnrateTarget, Record<Scenario['endpoint'], number>> = {
    burnrate: { 'chat.completions': 0, messages: 0 },
    burnrateOpen: { 'chat.completions': 0, messages: 0 },
    burnrateMetrics: { 'chat.completions': 0, messages: 0 },
  }
  // Prometheus scrapes the metrics target as it would in production (every 15 s; here every 5 s).
  let scrapes = 0
  const scraper = setInterval(() => {
    fetch(`${urls.burnrateMetrics}/metrics`).then(
      (r) => r.text().then(() => r.ok && scrapes++),
      () => {},
    )
  }, 5000)
  const results: Partial<Record<Scenario['key'], Record<TargetKey, Figures>>> = {}
  /** Each target's first warm-up round (its first seconds of load after start): calls per second and CPU per call. */
  const cold: Partial<Record<TargetKey, { rps: number; cpuPerCall: number | null }>> = {}
  const threads: Record<Scenario['key'], Partial<Record<TargetKey, Record<ThreadKind, number>>>> = { nonstream: {}, stream: {} }
  let failed = false
  /** Calls sent to each Burnrate, for the ledger check. */
  const countSent = (t: TargetKey, sc: Scenario, n: number) => {
    if (t === 'burnrate' || t === 'burnrateOpen' || t === 'burnrateMetrics') sent[t][sc.endpoint] += n
  }
  let peaks: Record<TargetKey | 'upstream', number | null> | undefined
  const exits = {} as Record<BurnrateTarget, number | null>
  const heap: Partial<Record<Scenario['key'], Record<HeapTarget, number>>> = {}

  try {
    for (const sc of SCENARIOS) {
      log(`\n${sc.title}`)
      const count = (t: TargetKey, n: number) => countSent(t, sc, n)
      for (let round = 0; round < p.warmRounds; round++) {
        log(`  warming up at ${THROUGHPUT_CONNECTIONS} connections, round ${round + 1}/${p.warmRounds}`)
        for (const t of order(round)) {
          const cpu0 = procs[t]?.cpuMicros() ?? null
          const w = await runLoad(urls[t], sc.call, THROUGHPUT_CONNECTIONS, p.warmRoundMs)
          const cpu1 = procs[t]?.cpuMicros() ?? null
          count(t, w.ok + w.errors)
          if (w.ok === 0) throw new Error(`${TARGET_LABEL[t]} answered no call correctly during warm-up (${w.errors} failed)`)
          // The first round of the first scenario: each process's first seconds of load after it started.
          if (round === 0 && sc === SCENARIOS[0]) {
            cold[t] = { rps: (w.ok * 1000) / w.elapsedMs, cpuPerCall: cpu0 === null || cpu1 === null || w.ok === 0 ? null : (cpu1 - cpu0) / w.ok }
          }
        }
      }
      log('  warming up at 1 connection')
      for (const t of TARGETS) {
        const w = await runLoad(urls[t], sc.call, 1, p.warmLatencyMs)
        count(t, w.ok + w.errors)
        if (w.ok === 0) throw new Error(`${TARGET_LABEL[t]} answered no call correctly during warm-up (${w.errors} failed)`)
      }
      const hist = {} as Record<TargetKey, RecordableHistogram>
      const fig = {} as Record<TargetKey, Figures>
      for (const t of TARGETS) fig[t] = { p50: 0, p99: 0, rps: 0, cpuPerCall: null, calls: 0, errors: 0 }
      for (let round = 0; round < ROUNDS; round++) {
        log(`  latency at 1 connection, round ${round + 1}/${ROUNDS}`)
        for (const t of order(round)) {
          const r = await runLoad(urls[t], sc.call, 1, p.latencyMs)
          count(t, r.ok + r.errors)
          if (hist[t]) hist[t].add(r.latency)
          else hist[t] = r.latency
          fig[t].calls += r.ok
          fig[t].errors += r.errors
        }
      }
      const tput = {} as Record<TargetKey, { ok: number; ms: number; cpu: number | null }>
      // The same CPU split by thread (event loop, worker threads, V8's helpers), for where the time goes.
      const byThread = {} as Partial<Record<TargetKey, Record<ThreadKind, number>>>
      for (let round = 0; round < ROUNDS; round++) {
        log(`  throughput at ${THROUGHPUT_CONNECTIONS} connections, round ${round + 1}/${ROUNDS}`)
        for (const t of order(round)) {
          const proc = procs[t]
          const cpu0 = proc?.cpuMicros() ?? null
          const th0 = proc?.threadCpuMicros() ?? null
          const r = await runLoad(urls[t], sc.call, THROUGHPUT_CONNECTIONS, p.throughputMs)
          const cpu1 = proc?.cpuMicros() ?? null
          const th1 = proc?.threadCpuMicros() ?? null
          if (th0 && th1) {
            const acc = (byThread[t] ??= { main: 0, worker: 0, v8: 0, other: 0 })
            // (A thread that ended meanwhile takes its time with it: never below zero.)
            for (const k of Object.keys(acc) as ThreadKind[]) acc[k] += Math.max(0, th1[k] - th0[k])
          }
          count(t, r.ok + r.errors)
          tput[t] ??= { ok: 0, ms: 0, cpu: cpu0 === null ? null : 0 }
          tput[t].ok += r.ok
          tput[t].ms += r.elapsedMs
          if (tput[t].cpu !== null && cpu0 !== null && cpu1 !== null) tput[t].cpu! += cpu1 - cpu0
          fig[t].calls += r.ok
          fig[t].errors += r.errors
        }
      }
      for (const t of TARGETS) {
        fig[t].p50 = hist[t].percentile(50) / 1e6
        fig[t].p99 = hist[t].percentile(99) / 1e6
        fig[t].rps = (tput[t].ok * 1000) / tput[t].ms
        fig[t].cpuPerCall = tput[t].cpu === null || tput[t].ok === 0 ? null : tput[t].cpu! / tput[t].ok
        const th = byThread[t]
        if (th && tput[t].ok > 0) threads[sc.key][t] = { main: th.main / tput[t].ok, worker: th.worker / tput[t].ok, v8: th.v8 / tput[t].ok, other: th.other / tput[t].ok }
        if (fig[t].errors > 0) failed = true
      }
      results[sc.key] = fig
    }
    // After every timed round: JS heap bytes allocated per call, sampled through the inspector (./proxy-kit/heap.ts).
    for (const sc of SCENARIOS) {
      log(`\n${sc.title}: heap bytes allocated per call`)
      const bytes = {} as Record<HeapTarget, number>
      for (const t of HEAP_TARGETS) {
        const child = procs[t]!
        // The other scenario ran last: its code paths are warm, this one's may have been deoptimized.
        countSent(t, sc, await callsFor(child.url, sc.call, 8, HEAP_WARM_MS, HEAP_WARM_CALLS))
        const h = await heapPerCall(child.inspectorUrl!, child.url, sc.call, { ms: p.heapMs, calls: HEAP_CALLS, connections: 4 })
        countSent(t, sc, h.calls)
        bytes[t] = h.bytesPerCall
      }
      heap[sc.key] = bytes
    }
  } finally {
    clearInterval(scraper)
    peaks = { upstream: children.upstream.peakRss(), direct: null, bare: null, bareUndici: null, hpm: null, burnrate: null, burnrateOpen: null, burnrateMetrics: null }
    for (const t of TARGETS) peaks[t] = procs[t]?.peakRss() ?? null
    // Burnrate flushes its ledger on SIGTERM; the others just exit.
    for (const t of BURNRATE_TARGETS) exits[t] = await b[t].child.stop()
    await Promise.all([children.bare.stop(), children.bareUndici.stop(), children.hpm.stop(), children.upstream.stop()])
  }

  const out: string[] = [
    '## Proxy benchmark',
    '',
    `Machine: ${describeMachine()}. Loopback only; load generator, mock upstream and each proxy in their own processes.`,
    `Warm-up: ${p.warmRounds} interleaved rounds of ${p.warmRoundMs / 1000} s per target at ${THROUGHPUT_CONNECTIONS} connections, then ${p.warmLatencyMs / 1000} s at 1, before anything is measured (steady state; the first round is reported as "cold"). ` +
      `Latency: ${ROUNDS} x ${p.latencyMs / 1000} s per target at 1 connection (request start to last byte). ` +
      `Throughput: ${ROUNDS} x ${p.throughputMs / 1000} s per target at ${THROUGHPUT_CONNECTIONS} keep-alive connections. ` +
      '"added" = the target minus calling the mock directly. "proxy CPU µs/call" = user + system CPU time of the ' +
      "proxy's own process during the throughput phase, per call answered.",
    'Burnrate runs as built (out/main/cli.js) with its SQLite ledger and the price library: once with one budget rule ' +
      'that matches every key (every call is metered, priced, checked against the budget and recorded), once with no rules.',
  ]
  for (const sc of SCENARIOS) {
    const f = results[sc.key]
    if (f) out.push('', scenarioTable(sc.title, f, THROUGHPUT_CONNECTIONS), '', metricsCost(f), '', threadSplit(threads[sc.key]))
    const h = heap[sc.key]
    if (h) out.push('', heapLine(h, p.heapMs))
  }
  const first = SCENARIOS[0]
  out.push(
    '',
    `Cold (${first.key}: each process's first ${p.warmRoundMs / 1000} s at ${THROUGHPUT_CONNECTIONS} connections after it started, the first warm-up round): ` +
      TARGETS.filter((t) => cold[t])
        .map((t) => `${TARGET_LABEL[t]} ${Math.round(cold[t]!.rps)} req/s${cold[t]!.cpuPerCall === null ? '' : `, ${Math.round(cold[t]!.cpuPerCall!)} µs/call`}`)
        .join('; ') +
      '.',
  )
  out.push('', `/metrics scraped ${scrapes} times during the run.`)
  out.push(
    '',
    `Peak memory (VmHWM) over the whole run: ${TARGETS.filter((t) => t !== 'direct')
      .map((t) => `${TARGET_LABEL[t]} ${mib(peaks![t])}`)
      .join('; ')}; mock upstream ${mib(peaks.upstream)}.`,
  )
  for (const t of BURNRATE_TARGETS) {
    if (exits[t] !== 0) {
      failed = true
      out.push('', `${TARGET_LABEL[t]} exited with ${exits[t]} on SIGTERM (expected 0 after flushing its ledger).`)
      continue
    }
    const check = checkLedger(join(b[t].dataDir, 'burnrate.db'), sent[t])
    if (!check.ok) failed = true
    out.push('', `Metering check (${TARGET_LABEL[t]}: its ledger after shutdown):`, ...check.lines.map((l) => `- ${l}`))
  }
  // Issue 20's goals, for the figures table: Burnrate (with its budget rule) against the bare node:http proxy.
  for (const sc of SCENARIOS) {
    const f = results[sc.key]
    if (!f) continue
    row(`proxy ${sc.key}: added p50 (c=1)`, f.burnrate.p50 - f.direct.p50, f.bare.p50 - f.direct.p50, '<= 1.1x', 'ms')
    row(`proxy ${sc.key}: throughput (c=${THROUGHPUT_CONNECTIONS})`, f.burnrate.rps, f.bare.rps, '>= 1.0x', 'req/s')
    // The same against a bare proxy that forwards with undici, as Burnrate does (issue 20 asks for both when pooling differs).
    row(`proxy ${sc.key}: throughput vs bare undici proxy`, f.burnrate.rps, f.bareUndici.rps, 'for reference', 'req/s')
    if (f.burnrate.cpuPerCall !== null && f.bare.cpuPerCall !== null) {
      row(`proxy ${sc.key}: CPU per call`, f.burnrate.cpuPerCall, f.bare.cpuPerCall, 'for reference', 'µs')
    }
    const h = heap[sc.key]
    if (h) row(`proxy ${sc.key}: heap bytes allocated per call`, h.burnrate, h.bare, 'for reference', 'B')
  }
  if (cold.burnrate && cold.bare) {
    row(`proxy ${first.key}: throughput, first ${p.warmRoundMs / 1000} s after start (cold)`, cold.burnrate.rps, cold.bare.rps, 'for reference', 'req/s')
  }
  const all = Object.values(results).flatMap((f) => BURNRATE_TARGETS.map((t) => verdict(f, t)))
  const met = all.length > 0 && all.every((v) => v.latencyMet && v.throughputMet)
  out.push('', `All of issue 20's proxy targets met, by every Burnrate in both scenarios: ${met ? 'yes' : 'no'}.`)
  process.stdout.write(`\n${out.join('\n')}\n`)
  for (const t of BURNRATE_TARGETS) rmSync(b[t].dataDir, { recursive: true, force: true })
  if (failed) process.exitCode = 1
}
