/** What one target achieved in one scenario. */
export interface Figures {
  /** Latency at 1 connection, ms. */
  p50: number
  p99: number
  /** Calls per second at the throughput concurrency. */
  rps: number
  /** CPU time the target's own process used per call at the throughput concurrency, µs (null: not measured). */
  cpuPerCall: number | null
  /** Calls measured (latency + throughput phases) and calls that failed. */
  calls: number
  errors: number
}

export const TARGETS = ['direct', 'bare', 'bareUndici', 'hpm', 'burnrate', 'burnrateOpen', 'burnrateMetrics'] as const
export type TargetKey = (typeof TARGETS)[number]

export const TARGET_LABEL: Record<TargetKey, string> = {
  direct: 'direct (no proxy)',
  bare: 'bare node:http proxy',
  bareUndici: 'bare proxy forwarding with undici',
  hpm: 'express + http-proxy-middleware',
  burnrate: 'Burnrate',
  burnrateOpen: 'Burnrate, no budget rules',
  burnrateMetrics: 'Burnrate, metrics and OTLP export on',
}

/** The Burnrate targets: each its own server with its own ledger. */
export const BURNRATE_TARGETS = ['burnrate', 'burnrateOpen', 'burnrateMetrics'] as const
export type BurnrateTarget = (typeof BURNRATE_TARGETS)[number]

/** Issue 20's targets: added p50 at most 1.1x the bare node:http proxy's, throughput at least 1.0x (the first ones were 1.5x and 0.7x). */
export const MAX_LATENCY_RATIO = 1.1
export const MIN_THROUGHPUT_RATIO = 1.0

export interface Verdict {
  latencyRatio: number
  throughputRatio: number
  latencyMet: boolean
  throughputMet: boolean
}

export function verdict(f: Record<TargetKey, Figures>, who: TargetKey = 'burnrate'): Verdict {
  const bareAdded = f.bare.p50 - f.direct.p50
  const added = f[who].p50 - f.direct.p50
  // A bare proxy that adds nothing measurable would make any ratio meaningless; floor it at 1 µs.
  const latencyRatio = added / Math.max(bareAdded, 0.001)
  const throughputRatio = f[who].rps / f.bare.rps
  return {
    latencyRatio,
    throughputRatio,
    latencyMet: latencyRatio <= MAX_LATENCY_RATIO,
    throughputMet: throughputRatio >= MIN_THROUGHPUT_RATIO,
  }
}

const ms = (n: number) => n.toFixed(3)
const plus = (n: number) => (n >= 0 ? '+' : '') + n.toFixed(3)
const x = (n: number) => `${n.toFixed(2)}x`

/** A markdown table (readable in a terminal, pasteable into the README) for one scenario. */
export function scenarioTable(title: string, f: Record<TargetKey, Figures>, connections: number): string {
  const d = f.direct
  const lines = [
    `### ${title}`,
    '',
    '| target | p50 ms (c=1) | p99 ms (c=1) | added p50 ms | added p99 ms | req/s (c=' + connections + ') | proxy CPU µs/call | added p50 vs bare | req/s vs bare |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
  ]
  for (const t of TARGETS) {
    const r = f[t]
    const isDirect = t === 'direct'
    const v = t === 'direct' || t === 'bare' ? null : verdict(f, t)
    lines.push(
      `| ${TARGET_LABEL[t]} | ${ms(r.p50)} | ${ms(r.p99)} | ${isDirect ? '-' : plus(r.p50 - d.p50)} | ${isDirect ? '-' : plus(r.p99 - d.p99)} | ${Math.round(r.rps)} | ${r.cpuPerCall === null ? '-' : Math.round(r.cpuPerCall)} | ${v ? x(v.latencyRatio) : t === 'bare' ? '1.00x' : '-'} | ${v ? x(v.throughputRatio) : t === 'bare' ? '1.00x' : '-'} |`,
    )
  }
  lines.push('')
  for (const t of BURNRATE_TARGETS) {
    const v = verdict(f, t)
    lines.push(
      `${TARGET_LABEL[t]}: added p50 ${x(v.latencyRatio)} the bare proxy's (target <= ${MAX_LATENCY_RATIO}x): ${v.latencyMet ? 'met' : 'NOT MET'}; ` +
        `throughput ${x(v.throughputRatio)} the bare proxy's (target >= ${MIN_THROUGHPUT_RATIO}x): ${v.throughputMet ? 'met' : 'NOT MET'}.`,
    )
  }
  const errs = TARGETS.filter((t) => f[t].errors > 0).map((t) => `${TARGET_LABEL[t]}: ${f[t].errors}`)
  if (errs.length) lines.push(`Failed calls (wrong status or length): ${errs.join(', ')}.`)
  return lines.join('\n')
}

/** Metrics on against metrics off, both with the same budget rule: what observability costs the proxy. */
export function metricsCost(f: Record<TargetKey, Figures>): string {
  const off = f.burnrate
  const on = f.burnrateMetrics
  const d = f.direct
  const cpu = (r: Figures) => (r.cpuPerCall === null ? '-' : Math.round(r.cpuPerCall))
  return (
    `Metrics on vs off (same budget rule): added p50 ${plus(on.p50 - d.p50)} vs ${plus(off.p50 - d.p50)} ms, ` +
    `added p99 ${plus(on.p99 - d.p99)} vs ${plus(off.p99 - d.p99)} ms, req/s ${Math.round(on.rps)} vs ${Math.round(off.rps)} ` +
    `(${x(on.rps / off.rps)}), proxy CPU ${cpu(on)} vs ${cpu(off)} µs/call.`
  )
}

export function mib(bytes: number | null): string {
  return bytes === null ? 'n/a' : `${(bytes / 2 ** 20).toFixed(1)} MiB`
}

/** Each proxy's CPU per call at the throughput concurrency, by thread (µs): where Burnrate's time goes against the bare proxies'. */
export function threadSplit(by: Partial<Record<TargetKey, Record<'main' | 'worker' | 'v8' | 'other', number>>>): string {
  const f = (n: number) => n.toFixed(1)
  const lines = ['CPU per call by thread (throughput phase, µs: event loop / worker threads, i.e. the ledger write thread / V8 helpers / other):']
  for (const t of TARGETS) {
    const s = by[t]
    if (s) lines.push(`- ${TARGET_LABEL[t]}: ${f(s.main)} / ${f(s.worker)} / ${f(s.v8)} / ${f(s.other)}`)
  }
  return lines.length > 1 ? lines.join('\n') : ''
}
