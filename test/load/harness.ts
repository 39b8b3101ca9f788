/**
 * Load and fault harness shared by the CI tests (test/load, test/faults/sigkill) and `npm run soak`:
 * a fast upstream replaying fixtures, the BUILT server (out/main/cli.js) in a child process
 * with a memory probe, a client load of concurrent streaming calls plus a dashboard poller,
 * and readers for the ledger and for raw keys in files. Loopback only.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { createWriteStream, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { calcPrice } from '@pydantic/genai-prices'
import Database from 'better-sqlite3'
import { stringify } from 'yaml'
import { fixture, sseChunks } from '../support/fixtures'

const HERE = dirname(fileURLToPath(import.meta.url))
export const ROOT = resolve(HERE, '../..')
export const CLI = join(ROOT, 'out/main/cli.js')
const PROBE = join(HERE, 'probe.mjs')

/** A streamed fixture and what one call of it costs (from genai-prices, as the README's counts give). */
export interface LoadFixture {
  name: string
  path: string
  body: Buffer
  chunks: Buffer[]
  model: string
  request: unknown
  costUsd: number
}

function price(model: string, providerId: string, usage: Record<string, number>): number {
  const p = calcPrice(usage, model, { providerId, timestamp: new Date() })
  if (!p) throw new Error(`no price for ${model}`)
  return p.total_price
}

export function loadFixtures(): LoadFixture[] {
  const anthropic = fixture('anthropic/messages-stream-text.sse')
  const openai = fixture('openai-chat/chat-stream-with-usage.sse')
  return [
    {
      name: 'anthropic',
      path: '/v1/messages',
      body: anthropic,
      chunks: sseChunks(anthropic, false),
      model: 'claude-sonnet-4-5-20250929',
      request: { model: 'claude-sonnet-4-5-20250929', stream: true, max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] },
      costUsd: price('claude-sonnet-4-5-20250929', 'anthropic', { input_tokens: 20, output_tokens: 5 }),
    },
    {
      name: 'openai',
      path: '/v1/chat/completions',
      body: openai,
      chunks: sseChunks(openai, false),
      model: 'gpt-4o-mini-2024-07-18',
      request: { model: 'gpt-4o-mini', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hi' }] },
      costUsd: price('gpt-4o-mini-2024-07-18', 'openai', { input_tokens: 78, output_tokens: 9 }),
    },
  ]
}

/** Per call, as the upstream saw it (performance.now() of this process). */
export interface UpstreamTiming {
  received: number
  headersSent: number
}

export interface LoadUpstream {
  url: string
  timings: Map<string, UpstreamTiming>
  close(): Promise<void>
}

/** A fault the upstream plays for one call: cut the connection mid-stream, go silent, or refuse. */
export type UpstreamFault = 'reset' | 'stall' | 'overloaded' | null

/** Replays the fixtures as streams, `chunkDelayMs` between events, and notes when each call arrived. */
export async function startLoadUpstream(
  fixtures: LoadFixture[],
  chunkDelayMs: number,
  fault: (id: string) => UpstreamFault = () => null,
): Promise<LoadUpstream> {
  const timings = new Map<string, UpstreamTiming>()
  const server = http.createServer((req, res) => {
    const received = performance.now()
    req.resume()
    req.on('end', () => {
      const f = fixtures.find((x) => req.url?.endsWith(x.path)) ?? fixtures[0]
      const id = req.headers['x-load-id']
      const what = typeof id === 'string' ? fault(id) : null
      if (what === 'overloaded') {
        res.writeHead(529, { 'content-type': 'application/json' })
        res.end(fixture('errors/anthropic-529-overloaded.json'))
        return
      }
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' })
      res.flushHeaders()
      if (typeof id === 'string') timings.set(id, { received, headersSent: performance.now() })
      let i = 0
      const next = () => {
        if (res.destroyed) return
        if (what && i === 2) {
          if (what === 'reset') req.socket.destroy()
          return // 'stall': silent from here on
        }
        if (i === f.chunks.length) {
          res.end()
          return
        }
        res.write(f.chunks[i++])
        setTimeout(next, chunkDelayMs)
      }
      next()
    })
  })
  server.keepAliveTimeout = 30_000
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    timings,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections()
        server.close(() => r())
      }),
  }
}

export interface MemoryProbe {
  rss: number
  heapTotal: number
  heapUsed: number
  external: number
  arrayBuffers: number
}

export interface BuiltServer {
  url: string
  pid: number
  dataDir: string
  dbFile: string
  logFile: string
  child: ChildProcess
  /** Forces two full GCs in the server and returns its memory. */
  probe(): Promise<MemoryProbe>
  /** Peak resident memory of the server process so far (bytes; Linux VmHWM). */
  peakRss(): number | null
  /** SIGTERM, and wait for a clean exit. */
  stop(): Promise<number | null>
  kill(signal: NodeJS.Signals): Promise<void>
  /** Stops it if it still runs, and removes its data dir. */
  dispose(): Promise<void>
}

/** Starts out/main/cli.js with `config` (providers pointed at `upstream`) in a new data dir (`nodeArgs`: node's own options, e.g. a smaller heap). */
export async function startBuiltServer(config: Record<string, any>, upstream: string, dataDir?: string, nodeArgs: string[] = []): Promise<BuiltServer> {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: build first (npm test and npm run soak build it)`)
  const dir = dataDir ?? mkdtempSync(join(tmpdir(), 'burnrate-load-'))
  const configFile = join(dir, 'config.yaml')
  writeFileSync(
    configFile,
    stringify({
      ...config,
      server: { host: '127.0.0.1', port: 0 },
      providers: { openai: { base_url: `${upstream}/v1` }, anthropic: { base_url: upstream } },
    }),
  )
  const logFile = join(dir, 'server.log')
  const log = createWriteStream(logFile, { flags: 'a' })
  const child = spawn(process.execPath, [...nodeArgs, '--expose-gc', '--import', pathToFileURL(PROBE).href, CLI, '--config', configFile, '--data-dir', dir], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let probeWaiters: ((m: MemoryProbe) => void)[] = []
  let buffered = ''
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)))
  const url = await new Promise<string>((resolveUrl, reject) => {
    const onLine = (line: string) => {
      const m = /listening on (http:\/\/\S+)/.exec(line)
      if (m) resolveUrl(m[1])
      if (line.startsWith('BURNRATE_PROBE ')) {
        const mem = JSON.parse(line.slice('BURNRATE_PROBE '.length)) as MemoryProbe
        const w = probeWaiters
        probeWaiters = []
        for (const f of w) f(mem)
      }
    }
    child.stderr!.on('data', (c: Buffer) => {
      log.write(c)
      buffered += c.toString('utf8')
      let nl: number
      while ((nl = buffered.indexOf('\n')) !== -1) {
        onLine(buffered.slice(0, nl))
        buffered = buffered.slice(nl + 1)
      }
    })
    child.stdout!.on('data', (c: Buffer) => log.write(c))
    void exited.then((code) => reject(new Error(`the server exited with ${code} before listening; see ${logFile}`)))
  })
  return {
    url,
    pid: child.pid!,
    dataDir: dir,
    dbFile: join(dir, 'burnrate.db'),
    logFile,
    child,
    probe: () =>
      new Promise<MemoryProbe>((r) => {
        probeWaiters.push(r)
        child.kill('SIGUSR2')
      }),
    peakRss() {
      try {
        const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))
        return m ? Number(m[1]) * 1024 : null
      } catch {
        return null
      }
    },
    async stop() {
      child.kill('SIGTERM')
      const code = await exited
      await new Promise<void>((r) => log.end(() => r()))
      return code
    },
    async kill(signal) {
      child.kill(signal)
      await exited
      await new Promise<void>((r) => log.end(() => r()))
    },
    async dispose() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL')
        await exited
      }
      if (!log.closed) await new Promise<void>((r) => log.end(() => r()))
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

export interface CallResult {
  id: string
  fixture: string
  key: string
  status: number
  ok: boolean
  /** performance.now() times on this process. */
  sent: number
  firstByte: number
  ended: number
  /** Date.now() when the response's last byte arrived. */
  endedAt: number
}

export interface LoadOptions {
  url: string
  fixtures: LoadFixture[]
  concurrency: number
  durationMs: number
  /** Send this many calls in all, however long they take (`durationMs` is then not a limit). */
  calls?: number
  keys: string[]
  /** GET these dashboard paths in turn every `pollMs` while the load runs. */
  poll?: { paths: string[]; everyMs: number }
  /** Stop starting calls when this returns true (the SIGKILL test). */
  stop?: () => boolean
  /** Calls for which the client hangs up after its first chunk. */
  hangUp?: (id: string) => boolean
  idPrefix?: string
  /** Told of each call as it ends (while the load runs). */
  onCall?: (r: CallResult) => void
}

export interface LoadResult {
  calls: CallResult[]
  /** Calls whose stream the client read whole with status 200. */
  completed: CallResult[]
  failed: CallResult[]
  polls: { status: number; ms: number }[]
}

/** Runs `concurrency` clients, each sending one streaming call after another, for `durationMs` (or until `calls` are sent and done). */
export async function runLoad(o: LoadOptions): Promise<LoadResult> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: o.concurrency + 8 })
  const calls: CallResult[] = []
  const polls: { status: number; ms: number }[] = []
  const until = performance.now() + o.durationMs
  const prefix = o.idPrefix ?? `c${Date.now().toString(36)}`
  let seq = 0
  let running = true
  const more = () => (o.calls === undefined ? performance.now() < until : seq < o.calls)

  const one = (worker: number): Promise<CallResult> => {
    const f = o.fixtures[seq % o.fixtures.length]
    const id = `${prefix}-${seq++}`
    const key = o.keys[worker % o.keys.length]
    const body = JSON.stringify(f.request)
    return new Promise((done) => {
      const r: CallResult = { id, fixture: f.name, key, status: 0, ok: false, sent: performance.now(), firstByte: 0, ended: 0, endedAt: 0 }
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(body)),
        'x-burnrate-session': id,
        'x-burnrate-agent': 'load-test',
        'x-load-id': id,
      }
      if (f.name === 'anthropic') {
        headers['x-api-key'] = key
        headers['anthropic-version'] = '2023-06-01'
      } else headers.authorization = `Bearer ${key}`
      const req = http.request(`${o.url}${f.path}`, { method: 'POST', headers, agent }, (res) => {
        r.status = res.statusCode ?? 0
        let size = 0
        res.once('data', () => {
          r.firstByte = performance.now()
          if (o.hangUp?.(id)) {
            r.ended = performance.now()
            r.endedAt = Date.now()
            req.destroy()
            done(r)
          }
        })
        res.on('data', (c: Buffer) => {
          size += c.length
        })
        res.on('end', () => {
          r.ended = performance.now()
          r.endedAt = Date.now()
          r.ok = r.status === 200 && res.complete && size === f.body.length
          done(r)
        })
        res.on('error', () => done(r))
      })
      req.on('error', () => done(r))
      req.end(body)
    })
  }

  const worker = async (w: number) => {
    while (running && more() && !o.stop?.()) {
      const r = await one(w)
      calls.push(r)
      o.onCall?.(r)
    }
  }
  const poller = async () => {
    if (!o.poll) return
    let i = 0
    while (running && (o.calls !== undefined || performance.now() < until) && !o.stop?.()) {
      const path = o.poll.paths[i++ % o.poll.paths.length]
      const t0 = performance.now()
      const status = await new Promise<number>((done) => {
        const req = http.get(`${o.url}${path}`, { agent }, (res) => {
          res.resume()
          res.on('end', () => done(res.statusCode ?? 0))
          res.on('error', () => done(0))
        })
        req.on('error', () => done(0))
      })
      polls.push({ status, ms: performance.now() - t0 })
      await new Promise((r) => setTimeout(r, o.poll!.everyMs))
    }
  }
  const workers = Promise.all(Array.from({ length: o.concurrency }, (_, w) => worker(w))).then(() => {
    running = false
  })
  await Promise.all([workers, poller()])
  agent.destroy()
  return { calls, completed: calls.filter((c) => c.ok), failed: calls.filter((c) => !c.ok), polls }
}

export interface LedgerView {
  count: number
  costUsd: number
  sessions: Set<string>
  integrity: string
}

/** Reads what the ledger holds (a reader connection; the server may still run). */
export function readLedger(dbFile: string, sessionPrefix?: string): LedgerView {
  const db = new Database(dbFile, { fileMustExist: true })
  try {
    const integrity = db.pragma('integrity_check', { simple: true }) as string
    const where = sessionPrefix ? `WHERE session LIKE '${sessionPrefix.replace(/'/g, "''")}%'` : ''
    const rows = db.prepare(`SELECT session, cost_usd FROM calls ${where}`).all() as { session: string; cost_usd: number }[]
    let cost = 0
    const sessions = new Set<string>()
    for (const r of rows) {
      cost += r.cost_usd
      sessions.add(r.session)
    }
    return { count: rows.length, costUsd: cost, sessions, integrity }
  } finally {
    db.close()
  }
}

/** The raw keys found in `files` (database, WAL, logs): must be none. */
export function findKeysInFiles(files: string[], keys: string[]): { file: string; key: string }[] {
  const found: { file: string; key: string }[] = []
  for (const file of files) {
    if (!existsSync(file)) continue
    const buf = readFileSync(file)
    for (const key of keys) if (buf.includes(key)) found.push({ file, key })
  }
  return found
}

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return 0
  const s = [...values].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]
}

/**
 * Latency Burnrate added to each call: the client's time to first byte minus the upstream's own
 * time to send its headers (both on this process's clock).
 */
export function addedLatencies(calls: CallResult[], timings: Map<string, UpstreamTiming>): number[] {
  const out: number[] = []
  for (const c of calls) {
    const u = timings.get(c.id)
    if (!u || !c.firstByte) continue
    out.push(c.firstByte - c.sent - (u.headersSent - u.received))
  }
  return out
}

/** Keys that look real and are unique to this run. */
export function makeKeys(n: number, tag: string): string[] {
  return Array.from({ length: n }, (_, i) => `sk-${tag}-${i}-${Math.random().toString(36).slice(2, 12)}${Math.random().toString(36).slice(2, 12)}`)
}

/** Another process that opens the database and holds a write lock until released (EXCLUSIVE: readers wait too; IMMEDIATE: only writers, as `burnrate import` writing). */
export async function lockFromAnotherProcess(file: string, mode: 'EXCLUSIVE' | 'IMMEDIATE' = 'EXCLUSIVE'): Promise<{ release(): Promise<void> }> {
  const script = `
    const Database = require('better-sqlite3')
    const db = new Database(${JSON.stringify(file)})
    db.exec('BEGIN ${mode}')
    process.stdout.write('locked\\n')
    process.stdin.once('data', () => { db.exec('COMMIT'); db.close(); process.exit(0) })
  `
  const child = spawn(process.execPath, ['-e', script], { cwd: ROOT, stdio: ['pipe', 'pipe', 'inherit'] })
  await new Promise<void>((ok, fail) => {
    child.stdout!.once('data', () => ok())
    child.once('exit', (code) => fail(new Error(`locker exited with ${code}`)))
  })
  return {
    release: () =>
      new Promise<void>((ok) => {
        child.once('exit', () => ok())
        child.stdin!.write('go\n')
      }),
  }
}

/** The fault mix of the faults scenario, by call number: a tenth each reset, stall, 529, client hang-up. */
export function faultMix(id: string): { upstream: UpstreamFault; hangUp: boolean } {
  const n = Number(id.slice(id.lastIndexOf('-') + 1)) % 10
  return { upstream: n === 0 ? 'reset' : n === 1 ? 'stall' : n === 2 ? 'overloaded' : null, hangUp: n === 3 }
}

/** Recorded calls by status, for sessions starting with `prefix`. */
export function statusCounts(dbFile: string, prefix: string): Record<number, number> {
  const db = new Database(dbFile, { readonly: true, fileMustExist: true })
  try {
    const rows = db.prepare('SELECT status, count(*) AS n FROM calls WHERE session LIKE ? GROUP BY status').all(`${prefix}%`) as { status: number; n: number }[]
    return Object.fromEntries(rows.map((r) => [r.status, r.n]))
  } finally {
    db.close()
  }
}
