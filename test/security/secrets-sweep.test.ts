import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { stringify } from 'yaml'
import { loadConfig } from '../../src/main/config/load'
import { createLogger } from '../../src/main/log'
import { PROVIDER_NAMES } from '../../src/main/providers/registry'
import { type BurnrateServer, createBurnrate } from '../../src/main/server/server'
import { fixture } from '../support/fixtures'
import { eventually, postJson, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { baseUrlFor } from '../support/server'

const WHOLE = 'sk-proj-WHOLERULESECRET-aaaaaaaaaaaaaa'
/**
 * Every secret of a config on every way out at once: a rule on a whole key that warns, alerts
 * and refuses, webhook URLs with a secret path and query, a team token the team server refuses,
 * keys in a query string echoed back by the provider, malformed Authorization headers, and
 * upstream.proxy credentials a proxy refuses or never answers. None in the data folder's files
 * (each private), the log at debug level, /metrics, the dashboard's answers or its exports.
 */
const SECRETS = {
  whole: 'WHOLERULESECRET',
  hook: 'HOOKPATHSECRET',
  team: 'TEAMTOKENSECRET',
  goog: 'GOOGQUERYSECRET',
  basic: 'BASICAUTHSECRET',
  dash: 'DASHSECRET',
}
const DASH = `DASHSECRET-0123456789abcdef`

let upstream: MockUpstream
let server: BurnrateServer
let url: string
let dir: string
const logLines: string[] = []

function filesUnder(d: string): string[] {
  const out: string[] = []
  for (const e of readdirSync(d)) {
    const p = join(d, e)
    if (statSync(p).isDirectory()) out.push(...filesUnder(p))
    else out.push(p)
  }
  return out
}

beforeAll(async () => {
  upstream = await startMockUpstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('openai-chat/chat-nonstream-cached.json') }))
  dir = mkdtempSync(join(tmpdir(), 'burnrate-sweep-'))
  const providers: Record<string, unknown> = {}
  for (const name of PROVIDER_NAMES) providers[name] = { base_url: baseUrlFor(name, upstream.url) }
  const file = join(dir, 'config.yaml')
  writeFileSync(
    file,
    stringify({
      server: { host: '127.0.0.1', port: 0 },
      providers,
      dashboard: { token: DASH },
      metrics: { enabled: true },
      alerts: { webhooks: [{ url: `${upstream.url}/hooks/${SECRETS.hook}?token=${SECRETS.hook}`, format: 'json' }, { url: `${upstream.url}/slack/${SECRETS.hook}`, format: 'slack' }], retries: 0 },
      team: { url: `${upstream.url}/team`, token: SECRETS.team },
      budgets: { rules: [{ api_key_pattern: WHOLE, daily_limit_usd: 0.0001, action: 'block', soft_limit_pct: 0.01, alert_at_pct: [0.01, 0.5] }] },
    }),
  )
  server = createBurnrate(loadConfig({ config: file, dataDir: join(dir, 'data') }, {}), { log: createLogger('debug', (l) => logLines.push(l)) })
  url = await server.listen()
})
afterAll(async () => {
  await server.close(1000).catch(() => {})
  await upstream.close()
  rmSync(dir, { recursive: true, force: true })
})

const body = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }

describe('secrets sweep', () => {
  it('no secret in the data folder, the log, metrics, exports or the dashboard', async () => {
    const seen: string[] = []
    for (let i = 0; i < 4; i++) {
      const r = await postJson(`${url}/v1/chat/completions`, body, { authorization: `Bearer ${WHOLE}` })
      seen.push(`${r.status}`)
    }
    await postJson(`${url}/v1/chat/completions`, body, { authorization: `Basic ${Buffer.from(`user:${SECRETS.basic}-xxxxxxxx`).toString('base64')}` })
    await postJson(`${url}/v1/chat/completions`, body, { authorization: `${SECRETS.basic}-yyyyyyyyyyyy` })
    upstream.setResponder((req) => ({ status: 401, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ error: { code: `bad key ${req.url}`, message: `API key not valid: ${req.url}`, status: 'INVALID_ARGUMENT' } }) }))
    await postJson(`${url}/gemini/v1beta/models/gemini-2.5-flash:generateContent?key=AIza${SECRETS.goog}-ccccccccc`, { contents: [] })
    await postJson(`${url}/gemini/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse&key=AIza${SECRETS.goog}-ccccccccc`, { contents: [] })
    // Wait for the alerts to be tried and the team sender to have tried.
    await eventually(() => expect(upstream.requests.some((r) => r.url.startsWith('/hooks/'))).toBe(true))
    await eventually(() => expect(upstream.requests.some((r) => r.url.startsWith('/team'))).toBe(true))
    const auth = { authorization: `Bearer ${DASH}` }
    const outputs: string[] = []
    for (const p of ['/metrics', '/api/dashboard/budgets', '/api/dashboard/alerts', '/api/health', '/api/dashboard/export?format=csv', '/api/dashboard/export?format=json', '/api/dashboard/summary', '/api/dashboard/calls']) {
      const r = await request(`${url}${p}`, { headers: auth })
      outputs.push(`${p}: ${r.status} ${String(r.body)}`)
    }
    server.ledger.flush()
    await new Promise((r) => setTimeout(r, 300))
    const files = filesUnder(join(dir, 'data'))
    const disk = files.map((f) => [f, readFileSync(f).toString('latin1')] as const)
    const log = logLines.join('')
    const problems: string[] = []
    for (const [name, s] of Object.entries(SECRETS)) {
      for (const [f, text] of disk) if (text.includes(s)) problems.push(`${name} in ${f}`)
      if (log.includes(s)) problems.push(`${name} in log`)
      for (const o of outputs) if (o.includes(s)) problems.push(`${name} in ${o.slice(0, 60)}`)
    }
    for (const f of files) {
      const mode = statSync(f).mode & 0o777
      if (mode & 0o077) problems.push(`${f} mode ${mode.toString(8)}`)
    }
    expect(seen).toEqual(['200', '429', '429', '429'])
    expect(problems).toEqual([])
  }, 60_000)
})

describe('proxy credentials', () => {
  it('never in the log, the database or an answer, whatever the proxy does', async () => {
    const net = await import('node:net')
    const seenByProxy: string[] = []
    const proxy = net.createServer((sock) => {
      sock.once('data', (d) => {
        seenByProxy.push(d.toString('latin1'))
        const text = d.toString('latin1')
        sock.end(`HTTP/1.1 407 Proxy Authentication Required\r\ncontent-type: text/plain\r\nconnection: close\r\ncontent-length: ${text.length}\r\n\r\n${text}`)
      })
    })
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', () => r()))
    const port = (proxy.address() as { port: number }).port
    const closed = net.createServer()
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', () => r()))
    const closedPort = (closed.address() as { port: number }).port
    await new Promise<void>((r) => closed.close(() => r()))
    const outputs: string[] = []
    const lines: string[] = []
    for (const proxyUrl of [`http://ann:PROXYSECRET1@127.0.0.1:${port}`, `socks5://ann:PROXYSECRET2@127.0.0.1:${port}`, `http://ann:PROXYSECRET3@127.0.0.1:${closedPort}`, `socks5://ann:PROXYSECRET4@127.0.0.1:${closedPort}`]) {
      const d = mkdtempSync(join(tmpdir(), 'burnrate-proxy-'))
      const file = join(d, 'config.yaml')
      writeFileSync(file, stringify({ server: { host: '127.0.0.1', port: 0 }, providers: { openai: { base_url: 'https://api.openai.example/v1' } }, upstream: { proxy: proxyUrl, connect_timeout_ms: 2000 } }))
      const s = createBurnrate(loadConfig({ config: file, dataDir: join(d, 'data') }, {}), { log: createLogger('debug', (l) => lines.push(l)) })
      const u = await s.listen()
      const r = await postJson(`${u}/v1/chat/completions`, body, { authorization: 'Bearer sk-proj-xxxxxxxxxxxxxxxxxxxxxx' })
      outputs.push(`${r.status} ${r.text}`)
      const h = await request(`${u}/api/health`)
      outputs.push(h.text)
      s.ledger.flush()
      await s.close(1000)
      for (const f of filesUnder(join(d, 'data'))) outputs.push(readFileSync(f).toString('latin1'))
      rmSync(d, { recursive: true, force: true })
    }
    proxy.close()
    const all = `${outputs.join('\n')}\n${lines.join('')}`
    for (const s of ['PROXYSECRET1', 'PROXYSECRET2', 'PROXYSECRET3', 'PROXYSECRET4', Buffer.from('ann:PROXYSECRET1').toString('base64')]) expect(all.includes(s), s).toBe(false)
  }, 60_000)
})
