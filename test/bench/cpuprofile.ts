/**
 * `npm run bench cpuprofile` (named only; not part of a whole `npm run bench`): where Burnrate's
 * event loop spends its CPU per non-streaming call, function by function, read from V8's CPU
 * profiler through the inspector (nothing is added to the server). Burnrate (with the proxy
 * bench's budget rule; `BENCH_CLI=<build>/main/cli.js` for another build, inside the repository)
 * and the bare undici pass-through are each warmed, then measured in interleaved rounds: the
 * event loop's CPU time per call from /proc with no profiler attached, then a profile sampled
 * every 50 µs. It prints each function's self time per call, the median over the rounds.
 *
 * On a busy machine a sampled profile counts the time the thread waited for a core to whatever
 * it was running, so a round's figures move by a factor of 2 or more: compare builds function by
 * function over several rounds (BENCH_PROFILE_ROUNDS, default 3), not by the whole call.
 * BENCH_PROFILE_MS: the profiled time per round (default 8000); BENCH_PROFILE_TOP: lines printed
 * (default 40); BENCH_PROFILE_SAVE=<dir> keeps each `.cpuprofile` (for DevTools).
 * BENCH_PROFILE_TOTALS=<name>,<name>: also each named function's total time a call (its own and
 * its callees', so what V8 inlines into it or not counts the same), the median over the rounds.
 * BENCH_CLI_B=<build>/main/cli.js[,<build>/main/cli.js...] (inside the repository) profiles other
 * builds beside the first, in the same interleaved rounds, so an A/B's builds see the same minutes
 * of the machine.
 */
import { rmSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { type Child, startChild } from './proxy-kit/child'
import { Inspector } from './proxy-kit/heap'
import { runLoad } from './proxy-kit/load'
import { SCENARIOS } from './proxy-kit/scenarios'
import { startBurnrate } from './proxy'

const KIT = join(dirname(fileURLToPath(import.meta.url)), 'proxy-kit')
const WARM_MS = 6000
const CPU_MS = 3000
const CONNECTIONS = 8
const TOTALS = (process.env.BENCH_PROFILE_TOTALS ?? '').split(',').filter(Boolean)

interface CallFrame {
  functionName: string
  url: string
  lineNumber: number
}
interface Profile {
  nodes: { id: number; callFrame: CallFrame; children?: number[] }[]
  samples: number[]
  timeDeltas: number[]
}

/** Self time per call by function (name and file, bundles' hashes dropped), idle left out. */
function selfPerCall(p: Profile, calls: number): Map<string, number> {
  const frames = new Map(p.nodes.map((n) => [n.id, n.callFrame]))
  const out = new Map<string, number>()
  for (let i = 0; i < p.samples.length; i++) {
    const f = frames.get(p.samples[i])!
    if (f.functionName === '(idle)') continue
    const file = f.url.replace(/^.*\/(out|node_modules|test)\//, '$1/').replace(/-[\w-]{8}\.js$/, '.js')
    const key = `${f.functionName || '(anonymous)'} ${file}${file ? `:${f.lineNumber + 1}` : ''}`
    out.set(key, (out.get(key) ?? 0) + (p.timeDeltas[i] ?? 0) / calls)
  }
  return out
}

/** Total time per call (self and callees) of each function named in `names`, idle left out. */
function totalPerCall(p: Profile, calls: number, names: readonly string[]): Map<string, number> {
  const byId = new Map(p.nodes.map((n) => [n.id, n]))
  const parent = new Map<number, number>()
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
  const out = new Map<string, number>()
  for (let i = 0; i < p.samples.length; i++) {
    if (byId.get(p.samples[i])!.callFrame.functionName === '(idle)') continue
    const seen = new Set<string>()
    for (let id: number | undefined = p.samples[i]; id !== undefined; id = parent.get(id)) {
      const name = byId.get(id)!.callFrame.functionName
      if (names.includes(name)) seen.add(name)
    }
    for (const name of seen) out.set(name, (out.get(name) ?? 0) + (p.timeDeltas[i] ?? 0) / calls)
  }
  return out
}

function median(xs: number[], n: number): number {
  const all = [...xs, ...Array<number>(Math.max(0, n - xs.length)).fill(0)].sort((a, b) => a - b)
  return all[Math.floor(all.length / 2)]
}

async function round(name: string, child: Child, inspector: Inspector, ms: number, save?: string): Promise<{ mainCpu: number; self: Map<string, number>; total: Map<string, number> }> {
  const call = SCENARIOS[0].call
  const t0 = child.threadCpuMicros()
  const plain = await runLoad(child.url, call, CONNECTIONS, CPU_MS)
  const t1 = child.threadCpuMicros()
  const mainCpu = t0 && t1 ? (t1.main - t0.main) / plain.ok : NaN
  await inspector.send('Profiler.enable')
  await inspector.send('Profiler.setSamplingInterval', { interval: 50 })
  await inspector.send('Profiler.start')
  const profiled = await runLoad(child.url, call, CONNECTIONS, ms)
  const { profile } = await inspector.send<{ profile: Profile }>('Profiler.stop')
  if (save) writeFileSync(join(save, `${name.replace(/\W+/g, '-')}-${Date.now()}.cpuprofile`), JSON.stringify(profile))
  return { mainCpu, self: selfPerCall(profile, profiled.ok), total: totalPerCall(profile, profiled.ok, TOTALS) }
}

export async function runCpuProfileBench(): Promise<void> {
  const rounds = Number(process.env.BENCH_PROFILE_ROUNDS ?? '3')
  const ms = Number(process.env.BENCH_PROFILE_MS ?? '8000')
  const top = Number(process.env.BENCH_PROFILE_TOP ?? '40')
  const save = process.env.BENCH_PROFILE_SAVE
  const tsx = ['--import', 'tsx']
  const upstream = await startChild('mock upstream', [...tsx, join(KIT, 'upstream.ts')])
  const rule = { api_key_pattern: 'sk-*', daily_limit_usd: 1_000_000, action: 'block' }
  const inspect = ['--inspect=127.0.0.1:0']
  const others = (process.env.BENCH_CLI_B ?? '').split(',').filter(Boolean)
  const [bare, ...brs] = await Promise.all([
    startChild('bare undici proxy', [...inspect, ...tsx, join(KIT, 'bare-undici-proxy.ts')], { TARGET: upstream.url }),
    startBurnrate('Burnrate', upstream.url, [rule], {}, inspect),
    ...others.map((cli, i) => startBurnrate(`Burnrate ${i + 2}`, upstream.url, [rule], {}, inspect, cli)),
  ])
  const targets: [string, Child][] = [
    ['Burnrate', brs[0].child],
    ...others.map((cli, i): [string, Child] => [`Burnrate ${i + 2} (${cli})`, brs[i + 1].child]),
    ['bare proxy forwarding with undici', bare],
  ]
  const inspectors = await Promise.all(targets.map(([, c]) => Inspector.connect(c.inspectorUrl!)))
  const got = targets.map(() => ({ mainCpu: [] as number[], self: new Map<string, number[]>(), total: new Map<string, number[]>() }))
  try {
    for (const [, c] of targets) await runLoad(c.url, SCENARIOS[0].call, CONNECTIONS, WARM_MS)
    for (let r = 0; r < rounds; r++) {
      for (let i = 0; i < targets.length; i++) {
        const k = (i + r) % targets.length
        process.stderr.write(`  ${targets[k][0]}: round ${r + 1}/${rounds}\n`)
        const one = await round(targets[k][0], targets[k][1], inspectors[k], ms, save)
        got[k].mainCpu.push(one.mainCpu)
        for (const [fn, us] of one.self) got[k].self.set(fn, [...(got[k].self.get(fn) ?? []), us])
        for (const [fn, us] of one.total) got[k].total.set(fn, [...(got[k].total.get(fn) ?? []), us])
      }
    }
  } finally {
    for (const i of inspectors) i.close()
    await Promise.all([...brs.map((b) => b.child.stop()), bare.stop(), upstream.stop()])
    for (const b of brs) rmSync(b.dataDir, { recursive: true, force: true })
  }
  const out = [`## Event loop CPU per non-streaming call, by function (${rounds} interleaved rounds, medians)`, '']
  targets.forEach(([name], k) => {
    const cpu = got[k].mainCpu.map((x) => x.toFixed(1)).join(', ')
    const own = [...got[k].self].map(([fn, xs]) => [fn, median(xs, rounds)] as const).sort((a, b) => b[1] - a[1])
    const total = own.reduce((a, [, us]) => a + us, 0)
    out.push(`### ${name}`, '', `Event loop CPU per call without the profiler, by round: ${cpu} µs. Profiled (busy samples) per call: ${total.toFixed(1)} µs.`, '')
    out.push('| self µs/call (median) | function |', '|---:|---|')
    for (const [fn, us] of own.slice(0, top)) out.push(`| ${us.toFixed(2)} | ${fn} |`)
    out.push('')
    if (TOTALS.length) {
      out.push('| total µs/call, self and callees (median) | function |', '|---:|---|')
      for (const fn of TOTALS) out.push(`| ${median(got[k].total.get(fn) ?? [], rounds).toFixed(2)} | ${fn} |`)
      out.push('')
    }
  })
  process.stdout.write(`\n${out.join('\n')}\n`)
}
