/**
 * `npm run bench alloc`: JS heap bytes allocated per proxied call, Burnrate (with the proxy
 * bench's budget rule) against the bare node:http and bare undici pass-throughs, and where
 * Burnrate's bytes come from (the largest allocation sites, by the function that allocates).
 * Allocation does not depend on the machine's load, so a change that allocates less shows here
 * on a busy machine where CPU timings cannot tell it apart. About 150 s.
 * BENCH_ALLOC_TOP=<n> prints that many sites (default 30); BENCH_ALLOC_MS the sampled time per
 * target (default 5 s, after BENCH_ALLOC_WARM_MS of warm-up, default 10 s); BENCH_ALLOC_SAVE=<dir> writes each sampled profile there (`.heapprofile`, for DevTools).
 */
import { rmSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { type Child, startChild } from './proxy-kit/child'
import { type HeapPerCall, callsFor, heapPerCall } from './proxy-kit/heap'
import { SCENARIOS } from './proxy-kit/scenarios'
import { startBurnrate } from './proxy'
import { row } from './report'

const KIT = join(dirname(fileURLToPath(import.meta.url)), 'proxy-kit')
// --expose-gc: a scavenge before the survivors' profile is read (./proxy-kit/heap.ts).
/** Calls each target is warmed with (on a busy machine, time alone left Burnrate's code half optimized) and sampled for at least. */
const WARM_CALLS = 15_000
const CALLS = 4000
const INSPECT = ['--inspect=127.0.0.1:0', '--expose-gc']

export async function runAllocBench(): Promise<void> {
  const top = Number(process.env.BENCH_ALLOC_TOP ?? '30')
  const ms = Number(process.env.BENCH_ALLOC_MS ?? '5000')
  const warmMs = Number(process.env.BENCH_ALLOC_WARM_MS ?? '10000')
  const tsx = ['--import', 'tsx']
  const upstream = await startChild('mock upstream', [...tsx, join(KIT, 'upstream.ts')])
  const env = { TARGET: upstream.url }
  const rule = { api_key_pattern: 'sk-*', daily_limit_usd: 1_000_000, action: 'block' }
  const [bare, bareUndici, br] = await Promise.all([
    startChild('bare proxy', [...INSPECT, ...tsx, join(KIT, 'bare-proxy.ts')], env),
    startChild('bare undici proxy', [...INSPECT, ...tsx, join(KIT, 'bare-undici-proxy.ts')], env),
    startBurnrate('Burnrate', upstream.url, [rule], {}, INSPECT),
  ])
  const targets: [string, Child][] = [
    ['bare node:http proxy', bare],
    ['bare proxy forwarding with undici', bareUndici],
    ['Burnrate', br.child],
  ]
  const out = ['## Heap bytes allocated per call (event loop, V8 sampling heap profiler)', '']
  try {
    for (const sc of SCENARIOS) {
      const got: Record<string, HeapPerCall> = {}
      const kept: Record<string, HeapPerCall> = {}
      for (const [name, child] of targets) {
        // Warm to steady state, then sample: optimized code allocates less than the interpreter's
        // (escape analysis), and a function still waiting for its optimized code on a busy machine
        // moves the figure by a few KB.
        await callsFor(child.url, sc.call, 8, warmMs, WARM_CALLS)
        const save = process.env.BENCH_ALLOC_SAVE ? join(process.env.BENCH_ALLOC_SAVE, `${sc.key}-${name.replace(/\W+/g, '-')}.heapprofile`) : undefined
        got[name] = await heapPerCall(child.inspectorUrl!, child.url, sc.call, { ms, calls: CALLS, connections: 4, top: name === 'Burnrate' ? top : 0, save })
        const saveKept = save?.replace('.heapprofile', '-survivors.heapprofile')
        kept[name] = await heapPerCall(child.inspectorUrl!, child.url, sc.call, { ms, calls: CALLS, connections: 4, top: name === 'Burnrate' ? top : 0, save: saveKept, survivors: true })
      }
      out.push(
        `### ${sc.title}`,
        '',
        '| target | heap bytes allocated per call | of them outliving the young generation | calls sampled |',
        '|---|---:|---:|---:|',
      )
      for (const [name] of targets) out.push(`| ${name} | ${Math.round(got[name].bytesPerCall)} | ${Math.round(kept[name].bytesPerCall)} | ${got[name].calls} |`)
      out.push('', `Burnrate's largest allocation sites (bytes per call, the allocating function itself):`, '')
      for (const s of got.Burnrate.sites) out.push(`- ${Math.round(s.bytesPerCall)} ${s.where}`)
      out.push('', `Burnrate's largest sites of bytes outliving the young generation (per call):`, '')
      for (const s of kept.Burnrate.sites) out.push(`- ${Math.round(s.bytesPerCall)} ${s.where}`)
      out.push('')
      row(`proxy ${sc.key}: heap bytes allocated per call`, got.Burnrate.bytesPerCall, got['bare node:http proxy'].bytesPerCall, 'for reference', 'B')
      row(`proxy ${sc.key}: heap bytes outliving the young generation per call`, kept.Burnrate.bytesPerCall, kept['bare node:http proxy'].bytesPerCall, 'for reference', 'B')
    }
  } finally {
    await br.child.stop()
    await Promise.all([bare.stop(), bareUndici.stop(), upstream.stop()])
    rmSync(br.dataDir, { recursive: true, force: true })
  }
  process.stdout.write(`\n${out.join('\n')}\n`)
}
