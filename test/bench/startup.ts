/**
 * `npm run bench startup`: how quickly the headless server is ready and how much memory it holds.
 *
 * Start-up: `node out/main/cli.js` (its own config and data folder, which an earlier start has
 * created, as on a user's machine) from spawn until `GET /api/health` answers 200, polled every
 * 2 ms over node:http; beside it the smallest node:http server answering the same way (the
 * floor any Node server pays). Wall time and the process's CPU time at that moment (the CPU
 * figure holds better on a busy machine). Rounds alternate the two.
 *
 * Memory: resident set (VmRSS, and its anonymous part: what the process itself allocated, not
 * the Node binary's shared code pages) 2 s after start, then after 8 s of load (non-streaming
 * calls at 32 connections through a mock upstream), 10 s idle (the write thread has ended) and
 * 45 s idle (the idle collection, 30-37.5 s after the last call, has run). BENCH_STARTS sets the rounds.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { stringify } from 'yaml'
import { startChild } from './proxy-kit/child'
import { runLoad } from './proxy-kit/load'
import { describeMachine } from './proxy-kit/machine'
import { SCENARIOS } from './proxy-kit/scenarios'
import { row } from './report'

const HERE = dirname(fileURLToPath(import.meta.url))
const ROOT = resolve(HERE, '../..')
const CLI = process.env.BENCH_CLI ?? join(ROOT, 'out/main/cli.js')
const BARE = join(HERE, 'proxy-kit/bare-server.mjs')

function log(line: string): void {
  process.stderr.write(`${line}\n`)
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

function healthy(url: string): Promise<boolean> {
  return new Promise((res) => {
    http
      .get(`${url}/api/health`, (r) => {
        r.resume()
        r.on('end', () => res(r.statusCode === 200))
      })
      .on('error', () => res(false))
  })
}

function procStat(pid: number): { cpuMs: number } {
  const rest = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
  return { cpuMs: (Number(rest[11]) + Number(rest[12])) * 10 }
}

/** VmRSS and RssAnon in MiB. */
function memory(pid: number): { rss: number; anon: number } {
  const s = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+)`, 'm').exec(s)?.[1] ?? NaN)
  return { rss: kb('VmRSS') / 1024, anon: kb('RssAnon') / 1024 }
}

/** Spawns `args`, waits for its "listening on" line, then polls health until 200. */
async function timeStart(args: string[]): Promise<{ ms: number; cpuMs: number; child: ChildProcess; url: string }> {
  const t0 = performance.now()
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  const url = await new Promise<string>((res, rej) => {
    const on = (d: Buffer) => {
      out += d
      const m = /listening on (http:\/\/[^\s)]+)/i.exec(out)
      if (m) res(m[1])
    }
    child.stdout!.on('data', on)
    child.stderr!.on('data', on)
    child.once('exit', (c) => rej(new Error(`exited with ${c} before listening:\n${out}`)))
  })
  while (!(await healthy(url))) await sleep(2)
  const ms = performance.now() - t0
  const { cpuMs } = procStat(child.pid!)
  child.stdout!.resume()
  child.stderr!.resume()
  return { ms, cpuMs, child, url }
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise((r) => child.once('exit', r))
  child.kill('SIGTERM')
  await exited
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
}

export async function runStartupBench(): Promise<void> {
  const rounds = Math.max(3, Number(process.env.BENCH_STARTS ?? '9') || 9)
  log(`start-up bench on ${describeMachine()}`)
  const upstream = await startChild('mock upstream', ['--import', 'tsx', join(HERE, 'proxy-kit/upstream.ts')])
  const dataDir = mkdtempSync(join(tmpdir(), 'burnrate-bench-start-'))
  const config = join(dataDir, 'config.yaml')
  writeFileSync(
    config,
    stringify({
      server: { host: '127.0.0.1', port: 0 },
      timezone: 'UTC',
      providers: { openai: { base_url: `${upstream.url}/v1` }, anthropic: { base_url: upstream.url } },
      budgets: { rules: [{ api_key_pattern: 'sk-*', daily_limit_usd: 1_000_000, action: 'block' }] },
    }),
  )
  const burnrateArgs = [CLI, '--config', config, '--data-dir', dataDir]
  const out: string[] = ['## Start-up and memory', '', `Machine: ${describeMachine()}.`]
  try {
    // The first start creates the database (and fills Node's compile cache): not counted.
    const first = await timeStart(burnrateArgs)
    await stop(first.child)
    await stop((await timeStart([BARE])).child)
    const b: { ms: number[]; cpu: number[] } = { ms: [], cpu: [] }
    const base: { ms: number[]; cpu: number[] } = { ms: [], cpu: [] }
    for (let i = 0; i < rounds; i++) {
      log(`  start-up round ${i + 1}/${rounds}`)
      const pair: [string[], { ms: number[]; cpu: number[] }][] = [
        [burnrateArgs, b],
        [[BARE], base],
      ]
      if (i % 2) pair.reverse()
      for (const [args, into] of pair) {
        const r = await timeStart(args)
        into.ms.push(r.ms)
        into.cpu.push(r.cpuMs)
        await stop(r.child)
      }
    }
    out.push(
      '',
      `Start-up, spawn to /api/health answering 200 (median of ${rounds}): Burnrate ${median(b.ms).toFixed(0)} ms wall, ${median(b.cpu).toFixed(0)} ms CPU ` +
        `(range ${Math.min(...b.ms).toFixed(0)}-${Math.max(...b.ms).toFixed(0)} ms); the bare node:http server ${median(base.ms).toFixed(0)} ms wall, ${median(base.cpu).toFixed(0)} ms CPU.`,
    )
    row('start-up to health (wall)', median(b.ms), median(base.ms), '< 300', 'ms')
    row('start-up to health (CPU)', median(b.cpu), median(base.cpu), 'for reference', 'ms')

    // Memory at rest, and after a load run.
    const bare = await timeStart([BARE])
    const s = await timeStart(burnrateArgs)
    await sleep(2000)
    const rest = memory(s.child.pid!)
    const bareRest = memory(bare.child.pid!)
    log('  memory: load run')
    const nonstream = SCENARIOS.find((x) => x.key === 'nonstream')!
    const load = await runLoad(s.url, nonstream.call, 32, 8000)
    const during = memory(s.child.pid!)
    await sleep(10_000)
    const after = memory(s.child.pid!)
    await sleep(35_000)
    const later = memory(s.child.pid!)
    await stop(s.child)
    await stop(bare.child)
    const f = (m: { rss: number; anon: number }) => `${m.rss.toFixed(1)} MiB (anonymous ${m.anon.toFixed(1)})`
    out.push(
      '',
      `Resident memory: at rest 2 s after start ${f(rest)}; at the end of ${load.ok} calls in 8 s ${f(during)}; 10 s later ${f(after)}; 45 s later ${f(later)}. ` +
        `The bare node:http server: ${f(bareRest)}.`,
    )
    // Issue 20's goal is 80 MB, 10^6 bytes each: 76.3 MiB, the unit every memory figure here is in.
    row('RSS at rest (headless)', rest.rss, bareRest.rss, `< ${((80 * 1e6) / 2 ** 20).toFixed(1)}`, 'MiB')
    row('RSS anonymous at rest', rest.anon, bareRest.anon, 'for reference', 'MiB')
    // 10 s after, the write thread and the grown heap are still held by design (both go after 30 s
    // of quiet: README, Start-up and memory); the goal is the figure 45 s after.
    row('RSS 10 s after a load run', after.rss, rest.rss, 'for reference', 'MiB')
    row('RSS 45 s after a load run', later.rss, rest.rss, '<= 1.25x', 'MiB')
  } finally {
    await upstream.stop()
    rmSync(dataDir, { recursive: true, force: true })
  }
  process.stdout.write(`\n${out.join('\n')}\n`)
}
