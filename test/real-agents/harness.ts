import { execFileSync, spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { calcPrice } from '@pydantic/genai-prices'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, expect } from 'vitest'
import { setupSnippets } from '../../src/renderer/src/lib/setup-snippets'
import { eventually } from '../support/http'
import { type TestServer, startTestServer } from '../support/server'
import { type AgentMock, type Exchange, startAgentMock } from './mock-upstream'
import { type Relay, startRelay } from './relay'

/**
 * What the real-agents suite's files share: a running Burnrate (a budget rule blocks keys
 * `sk-blocked-*`) between a relay that notes the bodies as each agent sent and got them and the
 * loopback mock upstream, the Connect panel's lines (which the README must repeat), a fresh HOME
 * for each agent, and one run of a CLI checked call by call against the ledger.
 */

export const HERE = dirname(fileURLToPath(import.meta.url))
export const BIN = join(HERE, 'node_modules', '.bin')
export const README = readFileSync(join(HERE, '..', '..', 'README.md'), 'utf8')
export const PROVIDER_PRICING: Record<string, string> = { anthropic: 'anthropic', openai: 'openai', gemini: 'google', vertex: 'google', bedrock: 'aws', deepseek: 'deepseek' }

export let mock: AgentMock
export let t: TestServer
export let relay: Relay
export let work: string

/** Starts the mock, Burnrate and the relay before the file's tests, and stops them after. */
export function useSuite(): void {
  beforeAll(async () => {
    mock = await startAgentMock()
    t = await startTestServer({ budgets: { rules: [{ api_key_pattern: 'sk-blocked-*', daily_limit_usd: 0, action: 'block' }] } }, mock.url)
    relay = await startRelay(t.url)
    work = mkdtempSync(join(tmpdir(), 'burnrate-agents-'))
  })
  afterAll(async () => {
    await relay?.close()
    await t?.cleanup()
    await mock?.close()
    if (work) rmSync(work, { recursive: true, force: true })
  })
}

export function snippet(id: string, block: number): string {
  const s = setupSnippets(relay.url).find((x) => x.id === id)
  if (!s) throw new Error(`no Connect snippet ${id}`)
  const code = s.blocks[block].code
  // The README shows the same lines, for the default address.
  expect(README, `README shows the ${id} setup`).toContain(setupSnippets('http://127.0.0.1:8787').find((x) => x.id === id)!.blocks[block].code)
  return code
}

/** `export K=V` lines of a shell snippet, as environment variables. */
export function exportsOf(code: string): Record<string, string> {
  const env: Record<string, string> = {}
  for (const m of code.matchAll(/^export ([A-Z_]+)=(.*)$/gm)) env[m[1]] = m[2]
  return env
}


export interface Agent {
  home: string
  cwd: string
  env: Record<string, string>
}

/** NO_PROXY and no_proxy as the Connect panel's (and README's) lines leave them in a shell that had neither. */
export function noProxyFromSnippet(): Record<string, string> {
  const out = execFileSync('sh', ['-c', `${snippet('corporate-proxy', 0)}\nprintf '%s\\n%s' "$NO_PROXY" "$no_proxy"`], { env: { PATH: process.env.PATH ?? '' }, encoding: 'utf8' })
  const [upper, lower] = out.split('\n')
  expect(upper).toBe('127.0.0.1,localhost')
  return { NO_PROXY: upper, no_proxy: lower }
}

/** A proxy nothing answers at: a call that goes to it instead of Burnrate fails. */
export const CORPORATE_PROXY = { HTTPS_PROXY: 'http://127.0.0.1:9', https_proxy: 'http://127.0.0.1:9', HTTP_PROXY: 'http://127.0.0.1:9', http_proxy: 'http://127.0.0.1:9' }

/**
 * A fresh HOME (and XDG folders) in a temp dir; telemetry and update checks off; loopback only.
 * Every agent runs as behind a corporate proxy (HTTPS_PROXY and HTTP_PROXY set, to a port where
 * nothing answers) with Burnrate's address in NO_PROXY, as the README and `burnrate connect` say:
 * without it Claude Code and Gemini CLI send their calls for http://127.0.0.1 to HTTPS_PROXY
 * (and Codex and opencode to HTTP_PROXY), and are stranded there.
 */
export function newAgent(name: string, env: Record<string, string>): Agent {
  const home = join(work, name, 'home')
  const cwd = join(work, name, 'project')
  mkdirSync(home, { recursive: true })
  mkdirSync(cwd, { recursive: true })
  return {
    home,
    cwd,
    env: {
      PATH: `${BIN}:${process.env.PATH ?? ''}`,
      HOME: home,
      XDG_CONFIG_HOME: join(home, '.config'),
      XDG_DATA_HOME: join(home, '.local', 'share'),
      XDG_CACHE_HOME: join(home, '.cache'),
      XDG_STATE_HOME: join(home, '.local', 'state'),
      TMPDIR: tmpdir(),
      LANG: 'C.UTF-8',
      TERM: 'dumb',
      NO_COLOR: '1',
      ...CORPORATE_PROXY,
      ...noProxyFromSnippet(),
      ...env,
    },
  }
}


export interface Run {
  code: number | null
  stdout: string
  stderr: string
}

/**
 * Runs the CLI, killed (code null) if it has not exited after `killAfterMs`: with the processes it
 * started (Gemini CLI runs itself again in a child, which would outlive it and hold its output open).
 */
export function run(agent: Agent, cmd: string, args: string[], extraEnv: Record<string, string> = {}, killAfterMs = 240_000): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(join(BIN, cmd), args, { cwd: agent.cwd, env: { ...agent.env, ...extraEnv }, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')))
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')))
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid!, 'SIGKILL')
      } catch {
        child.kill('SIGKILL')
      }
    }, killAfterMs)
    child.on('error', reject)
    child.on('close', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
  })
}

/** Once the CLI has exited: every call it made has ended and is written to the database. */
export async function settled(): Promise<void> {
  await eventually(() => t.server.proxy.active === 0, 15_000)
  t.server.ledger.flush()
}

export function rowsAfter(id: number): any[] {
  const db = new Database(t.dbFile, { readonly: true })
  try {
    return db.prepare('SELECT * FROM calls WHERE id > ? ORDER BY id').all(id)
  } finally {
    db.close()
  }
}

export function lastId(): number {
  const db = new Database(t.dbFile, { readonly: true })
  try {
    return (db.prepare('SELECT max(id) AS m FROM calls').get() as { m: number | null }).m ?? 0
  } finally {
    db.close()
  }
}

/**
 * Runs the CLI once, successfully, and returns the calls that reached the mock and the ledger's
 * rows for them: one row per call, and no other (no failed or retried calls), each call's request
 * and answer passed byte for byte both ways (a WebSocket's frames are checked by its own tests).
 */
export async function observed(agent: Agent, cmd: string, args: string[], extraEnv: Record<string, string> = {}): Promise<{ out: Run; exchanges: Exchange[]; rows: any[] }> {
  const beforeRow = lastId()
  const beforeEx = mock.exchanges.length
  const beforeSeen = relay.seen.length
  const out = await run(agent, cmd, args, extraEnv)
  expect(out.code, `${cmd} ${args.join(' ')} exited ${out.code}\n${out.stdout.slice(-2000)}\n${out.stderr.slice(-3000)}`).toBe(0)
  await settled()
  const exchanges = mock.exchanges.slice(beforeEx)
  const rows = (await eventually(() => {
    const r = rowsAfter(beforeRow)
    return r.length >= exchanges.length ? r : undefined
  }, 15_000)) as any[]
  expect(rows.length).toBe(exchanges.length)
  const seen = relay.seen.slice(beforeSeen)
  for (const e of exchanges) {
    if (e.protocol === 'responses-ws') continue
    expect(seen.some((s) => s.requestSha === e.requestSha && s.responseSha === e.responseSha), `${e.method} ${e.url} passed unchanged`).toBe(true)
  }
  return { out, exchanges, rows }
}

/**
 * One CLI turn: runs it, then checks every call it made, each at its model's list price times
 * `premium(model)` (a Vertex AI region's). Returns the session the calls were recorded under.
 */
export async function turn(
  agent: Agent,
  cmd: string,
  args: string[],
  expectAgent: string,
  extraEnv: Record<string, string> = {},
  premium: (model: string) => number = () => 1,
): Promise<{ out: Run; session: string; rows: any[]; exchanges: Exchange[] }> {
  const { out, exchanges, rows } = await observed(agent, cmd, args, extraEnv)
  expect(exchanges.some((e) => e.usage), 'the turn made a model call').toBe(true)
  for (const r of rows) {
    expect(r, `row ${JSON.stringify(r)}`).toMatchObject({ status: 200, error: null, agent: expectAgent, estimated: 0 })
  }
  const sessions = new Set(rows.map((r) => r.session))
  expect([...sessions], 'one session per turn').toHaveLength(1)
  for (const e of exchanges) {
    if (!e.usage) continue
    const r = rows.find((x) => x.input_tokens === e.usage!.input)
    expect(r, `a row with the ${e.usage.input} input tokens the mock returned`).toBeDefined()
    expect(r).toMatchObject({ model: e.model, output_tokens: e.usage.output, cache_read_tokens: e.usage.cacheRead })
    let price: ReturnType<typeof calcPrice>
    try {
      price = calcPrice({ input_tokens: e.usage.input, cache_read_tokens: e.usage.cacheRead, output_tokens: e.usage.output }, e.model, { providerId: PROVIDER_PRICING[r.provider] })
    } catch {
      price = null
    }
    if (price) {
      expect(r.priced).toBe(1)
      expect(r.cost_usd).toBeCloseTo(Number(price.total_price) * premium(e.model), 12)
    } else {
      // A model the price data does not know yet (Codex's default gpt-6.1-sol) is flagged, never silently $0.
      expect(r).toMatchObject({ priced: 0, cost_usd: 0 })
    }
  }
  return { out, session: rows[0].session, rows, exchanges }
}

export function jsonLines(text: string): any[] {
  return text
    .split('\n')
    .filter((l) => l.trim().startsWith('{'))
    .map((l) => {
      try {
        return JSON.parse(l)
      } catch {
        return null
      }
    })
    .filter(Boolean)
}


export const KEYS = {
  anthropic: 'sk-ant-api03-burnrate-suite-0000000000000001',
  openai: 'sk-proj-burnrate-suite-000000000000000002',
  gemini: 'AIzaSy-burnrate-suite-00000000000000003',
}

