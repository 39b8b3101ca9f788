/**
 * `npm run bench`: speed, measured as ratios against baselines in the same run.
 * Modes: `proxy` (added latency and throughput against a bare node:http proxy) and
 * `dashboard` (endpoint latency, export rate and database size with 1M calls; `--calls 10m` for
 * 10M, built once and cached for a day), `cardinality` (proxied calls' added latency with 100k
 * sessions in the ledger, with and without a dashboard polling), `postgres` (two instances on
 * one PostgreSQL against one on SQLite, under a block rule) and `startup` (time to a healthy
 * headless server, memory at rest and after load) and `alloc` (JS heap bytes allocated per proxied
 * call against the bare proxies, and where Burnrate's come from). No argument runs them all.
 * `cpuprofile` (Burnrate's event loop CPU per proxied call, function by function, against the bare
 * undici pass-through) runs only when named.
 */
// First: everything below, and every process it starts, runs with a temp home (./home.ts).
import './home'
import { printReport } from './report'

const modes = process.argv.slice(2).filter((a) => !a.startsWith('-'))
const all = modes.length === 0

if (all || modes.includes('proxy')) {
  const { runProxyBench } = await import('./proxy')
  await runProxyBench()
}
if (all || modes.includes('alloc')) {
  const { runAllocBench } = await import('./alloc')
  await runAllocBench()
}
if (all || modes.includes('startup')) {
  const { runStartupBench } = await import('./startup')
  await runStartupBench()
}
if (all || modes.includes('dashboard')) {
  const { runDashboardBench } = await import('./dashboard')
  await runDashboardBench()
}
if (all || modes.includes('cardinality')) {
  const { runCardinalityBench } = await import('./cardinality')
  await runCardinalityBench()
}
if (all || modes.includes('postgres')) {
  const { runPostgresBench } = await import('./postgres')
  await runPostgresBench()
}

if (modes.includes('cpuprofile')) {
  const { runCpuProfileBench } = await import('./cpuprofile')
  await runCpuProfileBench()
}

// Every bench's figures beside their baselines and goals, in one table.
printReport()
