import http from 'node:http'
import { readFileSync, writeFileSync, mkdtempSync, rmSync, existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { stringify } from 'yaml'
import { loadConfig } from '../../src/main/config/load'
import { createLogger } from '../../src/main/log'
import { type BurnrateServer, createBurnrate } from '../../src/main/server/server'
import { fixture } from '../support/fixtures'
import { postJson, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { baseUrlFor } from '../support/server'
import { PROVIDER_NAMES } from '../../src/main/providers/registry'

/**
 * Raw API keys, the admin token and the dashboard token never reach the database, its WAL or
 * the log (at debug level), in every place a key can be sent and on every path a call can take:
 * success, upstream refusal, timeouts, client aborts, budget refusals, bad requests.
 */

const ADMIN_TOKEN = 'ADMINTOKENSECRET-0123456789abcdef'
const DASH_TOKEN = 'DASHTOKENSECRET-0123456789abcdef'
const KEYS = {
  bearer: 'sk-proj-BEARERSECRET-aaaaaaaaaaaaaaaa',
  xApiKey: 'sk-ant-XAPIKEYSECRET-bbbbbbbbbbbbbbbb',
  goog: 'AIzaGOOGSECRET-cccccccccccccccccccc',
  azure: 'AZUREKEYSECRET-dddddddddddddddddddd',
  query: 'AIzaQUERYSECRET-eeeeeeeeeeeeeeeeeeee',
  blocked: 'sk-blocked-BLOCKEDSECRET-ffffffffffff',
}

let upstream: MockUpstream
let server: BurnrateServer
let url: string
let dir: string
const logLines: string[] = []

beforeAll(async () => {
  upstream = await startMockUpstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('openai-chat/chat-nonstream-cached.json') }))
  dir = mkdtempSync(join(tmpdir(), 'burnrate-secrets-'))
  const providers: Record<string, unknown> = {}
  for (const name of PROVIDER_NAMES) providers[name] = { base_url: baseUrlFor(name, upstream.url) }
  const file = join(dir, 'config.yaml')
  writeFileSync(
    file,
    stringify({
      server: { host: '127.0.0.1', port: 0 },
      providers,
      admin: { enabled: true, token: ADMIN_TOKEN },
      dashboard: { token: DASH_TOKEN },
      upstream: { first_byte_timeout_ms: 300, idle_timeout_ms: 300 },
      budgets: { rules: [{ api_key_pattern: 'sk-blocked-*', daily_limit_usd: 0, action: 'block' }] },
    }),
  )
  server = createBurnrate(loadConfig({ config: file, dataDir: dir }, {}), { log: createLogger('debug', (l) => logLines.push(l)) })
  url = await server.listen()
})
afterAll(async () => {
  await server.close(1000).catch(() => {})
  await upstream.close()
  rmSync(dir, { recursive: true, force: true })
})

const body = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }

async function everyKeyPosition(): Promise<void> {
  await postJson(`${url}/v1/chat/completions`, body, { authorization: `Bearer ${KEYS.bearer}` })
  await postJson(`${url}/v1/messages`, { ...body, max_tokens: 5 }, { 'x-api-key': KEYS.xApiKey, 'anthropic-version': '2023-06-01' })
  await postJson(`${url}/gemini/v1beta/models/gemini-2.5-flash:generateContent`, { contents: [] }, { 'x-goog-api-key': KEYS.goog })
  await postJson(`${url}/gemini/v1beta/models/gemini-2.5-flash:generateContent?key=${KEYS.query}`, { contents: [] })
  await postJson(`${url}/openai/v1/chat/completions`, body, { 'api-key': KEYS.azure })
  const blocked = await postJson(`${url}/v1/chat/completions`, body, { authorization: `Bearer ${KEYS.blocked}` })
  expect(blocked.status).toBe(429)
}

describe('secrets on disk and in the log', () => {
  it('no raw key, admin token or dashboard token in the database, its WAL or the log, whatever happens to the calls', async () => {
    // Successes.
    await everyKeyPosition()
    // Upstream stalls (504 before the first byte).
    upstream.setResponder(() => ({ status: 200, headerDelayMs: 2000, body: '{}' }))
    await everyKeyPosition()
    // Upstream errors with a body that echoes the key (some providers do).
    upstream.setResponder((req) => ({ status: 401, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ error: { message: `Incorrect API key provided: ${req.headers.authorization ?? req.headers['x-api-key'] ?? req.url}` } }) }))
    await everyKeyPosition()
    // Client aborts mid-call.
    upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, chunks: [Buffer.from('data: {}\n\n'), Buffer.from('data: {}\n\n')], delayMs: 500 }))
    await new Promise<void>((resolve) => {
      const req = http.request(`${url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${KEYS.bearer}`, 'content-type': 'application/json' } }, (res) => {
        res.once('data', () => {
          req.destroy()
          resolve()
        })
      })
      req.on('error', () => resolve())
      req.end(JSON.stringify({ ...body, stream: true }))
    })
    // A header Node refuses to forward, and admin and dashboard calls with right and wrong tokens.
    await request(`${url}/api/admin/budgets/rules`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    await request(`${url}/api/admin/budgets/rules`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}x` } })
    await postJson(`${url}/api/admin/budgets/rules`, { api_key_pattern: KEYS.bearer, daily_limit_usd: 100, action: 'warn' }, { authorization: `Bearer ${ADMIN_TOKEN}` })
    await request(`${url}/?token=${DASH_TOKEN}`)
    await request(`${url}/api/dashboard/summary`, { headers: { authorization: `Bearer ${DASH_TOKEN}` } })
    await request(`${url}/api/dashboard/export?format=csv`, { headers: { authorization: `Bearer ${DASH_TOKEN}` } })

    server.ledger.flush()
    const dbFile = join(dir, 'burnrate.db')
    const files = [dbFile, `${dbFile}-wal`].filter(existsSync)
    expect(files.length).toBeGreaterThan(0)
    const onDisk = Buffer.concat(files.map((f) => readFileSync(f)))
    const log = logLines.join('')
    // The rule's pattern is a whole key the user chose to write into a rule: it is the rule's identity.
    const secrets = [...Object.values(KEYS).filter((k) => k !== KEYS.bearer), ADMIN_TOKEN, DASH_TOKEN]
    for (const s of secrets) {
      const core = s.replace(/^(sk-[a-z]+-|sk-|AIza)/, '').slice(0, 12)
      expect(onDisk.includes(core), `${s} on disk`).toBe(false)
      expect(log.includes(core), `${s} in the log`).toBe(false)
    }
    expect(log.includes('BEARERSECRET')).toBe(false)
    // The calls are there, by hash.
    const n = (server.db.prepare('SELECT count(*) AS n FROM calls').get() as { n: number }).n
    expect(n).toBeGreaterThanOrEqual(18)
  }, 60_000)
})
