/**
 * A large, realistic ledger for the dashboard bench, built fast and cached.
 *
 * `streamCalls` generates a year of a heavy team's traffic day by day, in time order, without
 * holding it in memory: 20 tenants, 10 API keys each, 12 models (one without a price), 9 agents,
 * 40 projects, agent sessions of 1 to a few hundred calls 5-60 s apart (a tenth carry no session
 * id), busier on weekdays and in working hours, some plan (subscription) calls and some imported
 * from agents' logs. `buildLedger` writes them to a real ledger file (the real migrations; the
 * `calls` indexes dropped during the fill and rebuilt after, with their own SQL, which is faster
 * than growing them row by row) and folds every batch with the real RollupWriter, then caches the
 * file under the OS temp dir, so a rerun within a day opens it in a second. The report rollup is
 * built for the bench server's zone.
 */
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DB_FILE } from '../../src/main/config/paths'
import { ensureReportZone } from '../../src/main/dashboard/rollup/report-build'
import { RollupWriter } from '../../src/main/dashboard/rollup/writer'
import { INSERT_CALL_SQL, callValues } from '../../src/main/ledger/columns'
import { openDatabase } from '../../src/main/ledger/db'
import { MIGRATIONS } from '../../src/main/ledger/migrations'
import type { CallRecord } from '../../src/main/ledger/record'

/** Bump when the generator changes, so cached ledgers made by an older one are not reused. */
const GENERATOR_VERSION = 2
const DAY = 86_400_000

/** A deterministic PRNG (mulberry32), so every run fills the same ledger. */
function rng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const B62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
function randomText(r: () => number, n: number, alphabet = B62): string {
  let s = ''
  for (let i = 0; i < n; i++) s += alphabet[Math.floor(r() * alphabet.length)]
  return s
}

/**
 * The id an answer carries, in its provider's form and length (as the recorded fixtures have
 * them): the proxy records it with every answered call (import matching), and its index and
 * column are a real part of the ledger's size.
 */
function responseId(r: () => number, provider: string, agent: string): string {
  if (provider === 'anthropic') return `msg_01${randomText(r, 22)}`
  // Codex speaks the Responses API; other OpenAI clients mostly Chat Completions.
  if (provider === 'openai') return agent === 'codex' ? `resp_${randomText(r, 48, '0123456789abcdef')}` : `chatcmpl-${randomText(r, 29)}`
  if (provider === 'google') return randomText(r, 23)
  if (provider === 'groq') return `chatcmpl-${randomText(r, 36, '0123456789abcdef-')}`
  if (provider === 'openrouter') return `gen-${randomText(r, 10, '0123456789')}-${randomText(r, 20)}`
  return randomText(r, 32, '0123456789abcdef')
}

/** provider, model, US$ per million input and output tokens (null: no price known). */
const MODELS: [string, string, number | null, number | null][] = [
  ['openai', 'gpt-4o-mini', 0.15, 0.6],
  ['openai', 'gpt-4o', 2.5, 10],
  ['openai', 'gpt-5', 1.25, 10],
  ['openai', 'gpt-5-mini', 0.25, 2],
  ['anthropic', 'claude-sonnet-4-5', 3, 15],
  ['anthropic', 'claude-haiku-4-5', 1, 5],
  ['anthropic', 'claude-opus-4-1', 15, 75],
  ['google', 'gemini-2.5-pro', 1.25, 10],
  ['google', 'gemini-2.5-flash', 0.3, 2.5],
  ['mistral', 'mistral-large-latest', 2, 6],
  ['groq', 'llama-3.3-70b-versatile', 0.59, 0.79],
  ['openrouter', 'acme/unlisted-model-x', null, null],
]
const AGENTS = ['claude-code', 'codex', 'aider', 'cursor', 'cline', 'openhands', 'gemini-cli', 'opencode', '']
const TENANTS = [...Array.from({ length: 19 }, (_, i) => `tenant-${i}`), '']
const KEYS_PER_TENANT = 10
const PROJECTS = ['', ...Array.from({ length: 39 }, (_, i) => `/home/dev/src/project-${i}`)]
/** Relative traffic per hour of the day (UTC), working hours busiest. */
const HOURS = [2, 1, 1, 1, 1, 2, 4, 7, 10, 12, 12, 11, 9, 11, 12, 12, 11, 9, 7, 5, 4, 3, 3, 2]
const HOUR_SUM = HOURS.reduce((a, b) => a + b, 0)

export interface LedgerShape {
  calls: number
  sessions: number
  tenants: number
  keys: number
  models: number
  projects: number
  first: number
  last: number
}

/**
 * `n` calls over the `days` days before `end`, delivered in time order in chunks of about a
 * day (`onChunk` gets each, sorted by ts). Each session belongs to one tenant, key, agent and
 * project, mostly uses one model and sends a burst of calls.
 */
export function streamCalls(n: number, days: number, end: number, onChunk: (calls: CallRecord[]) => void): LedgerShape {
  const r = rng(42)
  // Response ids from a stream of their own: every other figure of the calls is as generator 1 made it.
  const ids = rng(7)
  const keys = TENANTS.map((t, ti) =>
    Array.from({ length: KEYS_PER_TENANT }, (_, k) => {
      const key = `sk-${t || 'none'}-${ti}-${k}-bench-key-000${k}`
      return { hash: createHash('sha256').update(key).digest('hex'), hint: `${key.slice(0, 3)}…${key.slice(-4)}` }
    }),
  )
  const start = end - days * DAY
  // Weekdays carry twice a weekend day's traffic; each day's share of n, rounded so they sum to n.
  const weight = (d: number) => ([0, 6].includes(new Date(start + d * DAY).getUTCDay()) ? 1 : 2)
  const weights = Array.from({ length: days }, (_, d) => weight(d))
  const wsum = weights.reduce((a, b) => a + b, 0)
  let carry: CallRecord[] = []
  let made = 0
  let sessions = 0
  let first = Infinity
  let last = -Infinity
  let planned = 0
  for (let d = 0; d < days; d++) {
    planned += (n * weights[d]) / wsum
    const target = d === days - 1 ? n : Math.round(planned)
    const dayStart = start + d * DAY
    const dayEnd = dayStart + DAY
    const calls = carry
    carry = []
    while (made < target) {
      sessions++
      const ti = Math.floor(r() * TENANTS.length)
      const key = keys[ti][Math.floor(r() * KEYS_PER_TENANT)]
      const agent = AGENTS[Math.floor(r() * AGENTS.length)]
      const project = PROJECTS[Math.floor(r() * PROJECTS.length)]
      const main = MODELS[Math.floor(r() * (MODELS.length - 1))]
      // One call in about 300 goes to a model without a price.
      const other = r() < 0.03 ? MODELS[MODELS.length - 1] : MODELS[Math.floor(r() * (MODELS.length - 1))]
      const named = r() >= 0.1
      const session = named ? `sess-${sessions.toString(36)}-${Math.floor(r() * 1e9).toString(36)}` : ''
      const plan = agent === 'claude-code' && r() < 0.3
      const imported = !plan && r() < 0.05
      const count = Math.min(target - made, 1 + Math.floor(-Math.log(1 - r()) * 60))
      let hour = 0
      for (let x = r() * HOUR_SUM; hour < 23 && x >= HOURS[hour]; hour++) x -= HOURS[hour]
      let ts = dayStart + hour * 3_600_000 + Math.floor(r() * 3_600_000)
      for (let i = 0; i < count && ts < end; i++) {
        const [provider, model, pin, pout] = r() < 0.9 ? main : other
        const roll = r()
        const status = roll < 0.97 ? 200 : roll < 0.98 ? 429 : roll < 0.99 ? (r() < 0.5 ? 500 : 529) : 499
        const input = 200 + Math.floor(r() * r() * 60_000)
        const cacheRead = Math.floor(input * r() * 0.8)
        const cacheWrite = Math.floor((input - cacheRead) * r() * 0.3)
        const output = status === 200 ? 10 + Math.floor(r() * r() * 4000) : 0
        const priced = pin !== null && pout !== null
        const cost = status === 200 && priced ? ((input - cacheRead) * pin + cacheRead * pin * 0.1 + output * pout) / 1e6 : 0
        const call: CallRecord = {
          ts,
          provider,
          model,
          endpoint: provider === 'anthropic' ? '/v1/messages' : '/v1/chat/completions',
          api_key_hash: key.hash,
          key_hint: key.hint,
          tenant: TENANTS[ti],
          agent,
          session,
          status,
          streamed: r() < 0.6,
          input_tokens: input,
          output_tokens: output,
          cache_read_tokens: cacheRead,
          cache_write_tokens: cacheWrite,
          cache_write_1h_tokens: 0,
          reasoning_tokens: model.startsWith('gpt-5') ? Math.floor(output * 0.6) : 0,
          cost_usd: cost,
          priced,
          estimated: false,
          latency_ms: Math.round(Math.exp(5.5 + r() * 4.5) * 100) / 100,
          error: status === 499 ? 'client_aborted' : null,
          // Answered calls carry the provider's id (refusals, errors and aborts none).
          response_id: status === 200 ? responseId(ids, provider, agent) : '',
          source: imported ? 'import' : 'proxy',
          billing: plan ? 'subscription' : 'api',
          project,
          member: '',
        }
        if (ts < dayEnd || d === days - 1) calls.push(call)
        else carry.push(call)
        made++
        ts += 5_000 + Math.floor(r() * 55_000)
      }
    }
    calls.sort((a, b) => a.ts - b.ts)
    if (calls.length) {
      first = Math.min(first, calls[0].ts)
      last = Math.max(last, calls[calls.length - 1].ts)
      onChunk(calls)
    }
  }
  if (carry.length) onChunk(carry.sort((a, b) => a.ts - b.ts))
  return {
    calls: made, sessions, tenants: TENANTS.length, keys: TENANTS.length * KEYS_PER_TENANT, models: MODELS.length,
    projects: PROJECTS.length, first, last,
  }
}

export interface BuiltLedger {
  /** The data dir holding the ledger (DB_FILE). */
  dir: string
  file: string
  shape: LedgerShape
  /** Seconds the build took (0 when reused from the cache). */
  buildS: number
  reused: boolean
}

/**
 * A ledger of `n` calls over the year before `end` of generation, cached: reused while less
 * than a day old (the year is generated up to a day past the time of generation, so every
 * dashboard window of the next day is full). `BENCH_FRESH=1` rebuilds it.
 */
export function buildLedger(n: number, tz: string, log: (line: string) => void, days = 365): BuiltLedger {
  const schema = MIGRATIONS.reduce((m, x) => Math.max(m, x.version), 0)
  // The folder is the bench server's data dir: the ledger is its DB_FILE.
  const dir = join(tmpdir(), 'burnrate-bench-cache', `ledger-${n}-${days}d-${tz.replace(/\W/g, '_')}-g${GENERATOR_VERSION}-s${schema}`)
  const file = join(dir, DB_FILE)
  const meta = join(dir, 'ledger.json')
  if (process.env.BENCH_FRESH !== '1' && existsSync(file) && existsSync(meta)) {
    const m = JSON.parse(readFileSync(meta, 'utf8')) as { generatedAt: number; shape: LedgerShape }
    if (Date.now() - m.generatedAt < DAY) return { dir, file, shape: m.shape, buildS: 0, reused: true }
  }
  mkdirSync(dir, { recursive: true })
  const tmp = `${file}.building`
  for (const f of [file, meta, tmp, `${tmp}-wal`, `${tmp}-shm`]) rmSync(f, { force: true })
  const generatedAt = Date.now()
  const t0 = performance.now()
  const db = openDatabase(tmp)
  db.pragma('synchronous = OFF')
  // The report rollup in the bench server's zone, so the server finds it built.
  ensureReportZone(db, tz)
  db.pragma('cache_size = -262144')
  const indexes = db
    .prepare(`SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'calls' AND sql IS NOT NULL`)
    .all() as { name: string; sql: string }[]
  for (const i of indexes) db.exec(`DROP INDEX ${i.name}`)
  const insert = db.prepare(INSERT_CALL_SQL)
  const rollups = new RollupWriter(db)
  const values: unknown[] = []
  const write = db.transaction((rows: CallRecord[]) => {
    for (const c of rows) insert.run(callValues(c, values))
    rollups.onBatch(rows)
  })
  let done = 0
  let nextLog = 1_000_000
  const shape = streamCalls(n, days, generatedAt + DAY, (calls) => {
    for (let i = 0; i < calls.length; i += 10_000) write(calls.slice(i, i + 10_000))
    done += calls.length
    if (done >= nextLog) {
      log(`  ${done.toLocaleString('en-US')} calls written and folded, ${((performance.now() - t0) / 1000).toFixed(0)} s`)
      nextLog += 1_000_000
    }
  })
  const t1 = performance.now()
  for (const i of indexes) db.exec(i.sql)
  log(`  indexes of calls rebuilt in ${((performance.now() - t1) / 1000).toFixed(0)} s`)
  db.pragma('wal_checkpoint(TRUNCATE)')
  db.close()
  renameSync(tmp, file)
  for (const f of [`${tmp}-wal`, `${tmp}-shm`]) rmSync(f, { force: true })
  writeFileSync(meta, JSON.stringify({ generatedAt, shape }))
  return { dir, file, shape, buildS: (performance.now() - t0) / 1000, reused: false }
}
