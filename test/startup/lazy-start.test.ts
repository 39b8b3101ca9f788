import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixture } from '../support/fixtures'
import { postJson, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { listeningUrl } from '../support/child'
import { newerPriceData } from '../support/price-data'

/**
 * The headless server answers /api/health without loading what no call needs yet (and what the
 * first call needs, undici, and the dashboard's express, load a moment after it answers): the
 * OpenTelemetry SDK and prom-client (off by default), agent setup's file editors (admin off by
 * default), the tokenizer and its thread (only for responses without usage), the CLI framework,
 * the ws library, undici's fetch and the ledger's write thread (the first call starts it).
 * Each is asserted absent from what the process loaded, and the same probe sees them once they
 * are configured on, so the test fails if the probe or the laziness breaks.
 */
const ROOT = resolve(__dirname, '../..')
const CLI = join(ROOT, 'out/main/cli.js')
const HOOK = join(ROOT, 'test/support/record-loads.mjs')

const children = new Set<ChildProcess>()
let dir: string

beforeAll(() => {
  if (!existsSync(CLI)) execFileSync('npx', ['electron-vite', 'build'], { cwd: ROOT, stdio: 'ignore' })
  dir = mkdtempSync(join(tmpdir(), 'burnrate-lazy-'))
})
afterAll(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL')
  rmSync(dir, { recursive: true, force: true })
})

function get(url: string): Promise<number> {
  return new Promise((res) => {
    http
      .get(url, (r) => {
        r.resume()
        r.on('end', () => res(r.statusCode ?? 0))
      })
      .on('error', () => res(0))
  })
}

/** Starts the built server with `config` and waits for health to answer 200. */
async function startBuilt(name: string, config: string, env: NodeJS.ProcessEnv = {}): Promise<{ url: string; loads: () => string[]; stop: () => Promise<void> }> {
  const data = join(dir, name)
  const cfg = join(dir, `${name}.yaml`)
  const loads = join(dir, `${name}.loads`)
  writeFileSync(cfg, `server: {host: 127.0.0.1, port: 0}\n${config}`)
  const child = spawn(process.execPath, ['--import', HOOK, CLI, '--config', cfg, '--data-dir', data], {
    env: { ...process.env, ...env, BURNRATE_TEST_LOADS: loads },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  children.add(child)
  const exit = new Promise<number | null>((r) => child.once('exit', (c) => r(c)))
  const url = await listeningUrl(child).url
  await expect.poll(() => get(`${url}/api/health`)).toBe(200)
  return {
    url,
    loads: () => readFileSync(loads, 'utf8').split('\n').filter(Boolean),
    stop: async () => {
      child.kill('SIGTERM')
      expect(await exit).toBe(0)
    },
  }
}

/** Starts the built server with `config`, waits for health to answer 200, stops it; returns what it loaded. */
async function loadsUntilHealthy(name: string, config: string): Promise<string[]> {
  return (await startedLoads(name, config)).all
}

/** What the built server started with `config` loaded until health answered 200 (`all`), and of it what it loaded before it listened on its URL. */
async function startedLoads(name: string, config: string): Promise<{ all: string[]; beforeListening: string[] }> {
  const s = await startBuilt(name, config)
  const all = s.loads()
  await s.stop()
  const listening = all.indexOf(`main listening ${new URL(s.url).host}`)
  expect(listening, 'the probe marks the listen').toBeGreaterThan(0)
  return { all, beforeListening: all.slice(0, listening) }
}

const has = (loads: string[], part: string) => loads.some((l) => l.includes(part))

describe('headless start-up loads only what the first call needs', () => {
  it('answers health with no telemetry SDK, metrics client, agent editors, tokenizer or CLI framework loaded', async () => {
    const { all: loads, beforeListening } = await startedLoads('default', '')
    // The probe works: the server and the proxy's own libraries are there, before it listened.
    expect(has(beforeListening, '/out/main/chunks/server-')).toBe(true)
    expect(has(beforeListening, '/node_modules/better-sqlite3/')).toBe(true)
    for (const lazy of [
      '/node_modules/@opentelemetry/',
      '/node_modules/prom-client/',
      '/node_modules/diff/',
      '/node_modules/jsonc-parser/',
      '/node_modules/@decimalturn/toml-patch/',
      '/node_modules/gpt-tokenizer/',
      '/node_modules/commander/',
      // WebSocket support (Codex's Responses socket) loads with the first upgrade; undici's
      // fetch, WebSocket and cache never (see the price check below).
      '/node_modules/ws/',
      '/node_modules/undici/lib/web/',
      'estimate-worker.js',
      // The PostgreSQL driver loads only with storage.url.
      '/node_modules/pg/',
      // The ledger's write thread starts with the first call's batch.
      'ledger-worker.js',
      // The FFI that trims the C heap loads with the first collection after calls.
      '/node_modules/koffi/',
      // The streaming JSON parser loads with the first batch result too large to hold (metering/path-picker.ts).
      '/node_modules/@streamparser/json/',
    ]) {
      expect(has(loads, lazy), lazy).toBe(false)
    }
    // The price library (its price table) loads a moment after the server listens (200 ms, a
    // timer: on a busy machine that may be before health answers), or for the first call: not
    // in start-up itself. (That it does load then: the preload test below.)
    expect(has(beforeListening, '/out/main/chunks/genai-prices-')).toBe(false)
  })

  it("never loads Node's internal undici (fetch, WebSocket) or WebCrypto, which ES imports of node:http and node:crypto would", async () => {
    const s = await startBuilt('builtins', '')
    expect((await request(`${s.url}/api/dashboard/summary`)).status).toBe(200)
    await s.stop()
    const loads = s.loads()
    expect(has(loads, 'builtin:internal/crypto/hash')).toBe(true) // the probe works: node:crypto's hashing is used (key hashes)
    expect(has(loads, 'builtin:internal/deps/undici/')).toBe(false)
    expect(has(loads, 'builtin:internal/crypto/webcrypto')).toBe(false)
  })

  it("a price check fetches with undici's request alone: not its index (fetch, WebSocket, caches, mocks) nor Node's internal undici", async () => {
    const data = JSON.stringify(await newerPriceData({}))
    const prices = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(data)
    })
    await new Promise<void>((r) => prices.listen(0, '127.0.0.1', r))
    try {
      // The first check comes 10 s after start.
      const s = await startBuilt('price-check', `pricing: {update_url: "http://127.0.0.1:${(prices.address() as AddressInfo).port}/data.json"}\n`, {
        BURNRATE_PRICE_AUTO_UPDATE: 'true',
      })
      await expect.poll(async () => (await request(`${s.url}/api/dashboard/prices`)).json().source, { timeout: 40_000 }).toBe('updated')
      await s.stop()
      const loads = s.loads()
      expect(has(loads, '/node_modules/undici/lib/api/api-request.js')).toBe(true) // the probe works: the check used undici
      expect(has(loads, '/node_modules/undici/index.js')).toBe(false)
      expect(has(loads, '/node_modules/undici/lib/web/')).toBe(false)
      expect(has(loads, 'builtin:internal/deps/undici/')).toBe(false)
    } finally {
      await new Promise((r) => prices.close(r))
    }
  }, 60_000)

  it("loads undici (the proxy's HTTP client), express (the dashboard and admin routes) and the price library a moment after health answers, with no request for them", async () => {
    const s = await startBuilt('api-preload', '')
    try {
      await expect.poll(() => has(s.loads(), '/node_modules/express/'), { timeout: 10_000 }).toBe(true)
      expect(has(s.loads(), '/node_modules/undici/lib/dispatcher/pool.js')).toBe(true)
      await expect.poll(() => has(s.loads(), '/out/main/chunks/genai-prices-'), { timeout: 10_000 }).toBe(true)
    } finally {
      await s.stop()
    }
  })

  it('in UTC, constructs no Intl formatter (ICU locale, currency and zone data stay unread); in another zone, a date formatter', async () => {
    const utc = await loadsUntilHealthy('utc', 'timezone: UTC\n')
    expect(has(utc, '/out/main/chunks/server-')).toBe(true)
    expect(has(utc, 'intl:DateTimeFormat')).toBe(false)
    // A currency formatter built at import (the alert payloads' money, src/shared/format.ts) kept
    // about 4.5 MiB of the Node binary's ICU pages resident at rest.
    expect(has(utc, 'intl:NumberFormat')).toBe(false)
    expect(has(utc, 'intl:Collator')).toBe(false)
    const berlin = await loadsUntilHealthy('berlin', 'timezone: Europe/Berlin\n')
    expect(has(berlin, 'intl:DateTimeFormat')).toBe(true)
  })

  it('loads them once configured on, before health answers', async () => {
    const loads = await loadsUntilHealthy(
      'on',
      'metrics: {enabled: true}\notel: {endpoint: "http://127.0.0.1:9"}\nadmin: {enabled: true, token: "t0ken-for-the-test"}\n',
    )
    expect(has(loads, '/node_modules/prom-client/')).toBe(true)
    expect(has(loads, '/node_modules/@opentelemetry/sdk-trace/')).toBe(true)
    expect(has(loads, '/node_modules/diff/')).toBe(true)
  })
})

describe('the ledger write thread runs only while there are calls to write', () => {
  let upstream: MockUpstream
  beforeAll(async () => {
    upstream = await startMockUpstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('openai-chat/chat-nonstream-cached.json') }))
  })
  afterAll(async () => {
    await upstream?.close()
  })

  it('the first call starts it, a pause between calls keeps it, it ends once idle for 30 s, the next call starts another; every call is recorded', async () => {
    const s = await startBuilt('thread', `providers: {openai: {base_url: "${upstream.url}/v1"}}\npricing: {auto_update: false}\n`)
    try {
      const threads = () => s.loads().filter((l) => l.startsWith('worker ') && l.endsWith('/ledger-worker.js')).length
      const call = async () => {
        const r = await postJson(`${s.url}/openai/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }, { authorization: 'Bearer sk-lazy-thread-0001' })
        expect(r.status).toBe(200)
      }
      const requests = async () => (await request(`${s.url}/api/dashboard/summary`)).json().today_requests as number
      expect(threads()).toBe(0)
      await call()
      await expect.poll(threads, { timeout: 20_000 }).toBe(1)
      await expect.poll(requests, { timeout: 20_000 }).toBe(1)
      // A pause as long as an agent's between two calls (the thread used to end after 5 s): the
      // same thread writes the next call, none is started (each start costs 60-160 ms of CPU).
      await new Promise((r) => setTimeout(r, 7_000))
      await call()
      await expect.poll(requests, { timeout: 20_000 }).toBe(2)
      expect(threads()).toBe(1)
      // Idle for its 30 s: it ends. The next call's batch starts a new thread (it loads the script again).
      await new Promise((r) => setTimeout(r, 31_000))
      await call()
      await expect.poll(threads, { timeout: 20_000 }).toBe(2)
      await expect.poll(requests, { timeout: 20_000 }).toBe(3)
    } finally {
      await s.stop()
    }
  }, 120_000)
})
