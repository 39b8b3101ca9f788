import { execFileSync, spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import http2 from 'node:http2'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket, { WebSocketServer } from 'ws'
import { ADMIN_CONFIG, TOKEN } from '../admin/support'
import { fixture } from '../support/fixtures'
import { eventually, postJson, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { PLAIN_HOST, type PrivateCa, SECURE_HOST, makePrivateCa, startConnectProxy, startHttpsUpstream, startLoggedServer, startSocks5Proxy } from './support'
import { lastLedgerRow } from '../support/ledger-rows'

/**
 * Networks as users have them: an HTTPS upstream signed by a private CA, DNS that does not
 * resolve, and a mandatory corporate proxy (CONNECT, with credentials), from config or from
 * HTTPS_PROXY / HTTP_PROXY / NO_PROXY.
 */

const JSON_BODY = fixture('openai-chat/chat-nonstream-cached.json')
const CHAT = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }

let ca: PrivateCa
let tlsUp: Awaited<ReturnType<typeof startHttpsUpstream>>
/** The HTTPS upstream streams in two halves; the second waits for `release()`. */
let release: () => void = () => {}

beforeAll(async () => {
  ca = makePrivateCa()
  tlsUp = await startHttpsUpstream(ca, (req, res) => {
    let body = ''
    req.on('data', (c) => (body += c))
    req.on('end', () => {
      if (JSON.parse(body || '{}').stream) {
        res.writeHead(200, { 'content-type': 'text/event-stream' })
        res.write('data: {"choices":[{"index":0,"delta":{"content":"first"}}]}\n\n')
        release = () => res.end('data: {"choices":[{"index":0,"delta":{"content":" second"}}]}\n\ndata: [DONE]\n\n')
        return
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON_BODY)
    })
  })
})
afterAll(async () => {
  await tlsUp?.close()
  if (ca) rmSync(ca.dir, { recursive: true, force: true })
})

function lastRow(dbFile: string): any {
  return lastLedgerRow(dbFile)
}

describe('an HTTPS upstream signed by a private CA', () => {
  it('untrusted: the client, the log, the ledger and /api/admin/providers say why and how to fix it', async () => {
    const s = await startLoggedServer({ ...ADMIN_CONFIG, providers: { openai: { base_url: `${tlsUp.url}/v1` } } })
    try {
      const res = await postJson(`${s.url}/v1/chat/completions`, CHAT)
      expect(res.status).toBe(502)
      const err = res.json().error
      expect(err.type).toBe('upstream_unreachable')
      expect(err.message).toMatch(/not signed by a certificate authority this machine trusts \(UNABLE_TO_VERIFY_LEAF_SIGNATURE\)/)
      expect(err.message).toContain('upstream.ca_file')
      expect(err.message).toContain('NODE_EXTRA_CA_CERTS')
      expect(s.lines.some((l) => l.includes('UNABLE_TO_VERIFY_LEAF_SIGNATURE') && l.includes('upstream.ca_file'))).toBe(true)
      const row = await eventually(() => lastRow(s.dbFile))
      expect(row).toMatchObject({ status: 502, error: 'upstream_unreachable: UNABLE_TO_VERIFY_LEAF_SIGNATURE' })
      const providers = (await request(`${s.url}/api/admin/providers`, { headers: { authorization: `Bearer ${TOKEN}` } })).json()
      expect(providers.find((p: any) => p.name === 'openai').last_error).toBe('upstream_unreachable: UNABLE_TO_VERIFY_LEAF_SIGNATURE')
    } finally {
      await s.stop()
    }
  })

  it('trusted with upstream.ca_file: the call goes through and is metered', async () => {
    const s = await startLoggedServer({ upstream: { ca_file: ca.caFile }, providers: { openai: { base_url: `${tlsUp.url}/v1` } } })
    try {
      const res = await postJson(`${s.url}/v1/chat/completions`, CHAT)
      expect(res.status).toBe(200)
      const row = await eventually(() => lastRow(s.dbFile))
      expect(row.status).toBe(200)
      expect(row.input_tokens).toBeGreaterThan(0)
    } finally {
      await s.stop()
    }
  })

  it("trusted with a relative upstream.ca_file: taken from the config file's folder, not the working folder", async () => {
    // The CA file is written beside the config file; the tests run in the repository, which has no certs/ folder.
    expect(existsSync('certs/ca.pem')).toBe(false)
    const s = await startLoggedServer({ upstream: { ca_file: 'certs/ca.pem' }, providers: { openai: { base_url: `${tlsUp.url}/v1` } } }, { 'certs/ca.pem': readFileSync(ca.caFile) })
    try {
      expect(s.server.config.upstream.ca_file).toBe(join(dirname(s.dbFile), 'certs', 'ca.pem'))
      expect((await postJson(`${s.url}/v1/chat/completions`, CHAT)).status).toBe(200)
      expect((await eventually(() => lastRow(s.dbFile))).status).toBe(200)
    } finally {
      await s.stop()
    }
  })

  it('trusted with NODE_EXTRA_CA_CERTS: the built server reaches it', async () => {
    const root = resolve(__dirname, '../..')
    const cli = join(root, 'out/main/cli.js')
    if (!existsSync(cli)) execFileSync('npx', ['electron-vite', 'build'], { cwd: root, stdio: 'ignore' })
    const dir = mkdtempSync(join(tmpdir(), 'burnrate-extra-ca-'))
    writeFileSync(join(dir, 'config.yaml'), `providers:\n  openai:\n    base_url: ${tlsUp.url}/v1\n`)
    const child = spawn(process.execPath, [cli, '--config', join(dir, 'config.yaml'), '--data-dir', dir, '--port', '0'], {
      env: { ...process.env, NODE_EXTRA_CA_CERTS: ca.caFile },
      stdio: ['ignore', 'ignore', 'pipe'],
    })
    try {
      let err = ''
      const url = await new Promise<string>((ok, fail) => {
        child.stderr!.on('data', (d) => {
          err += d
          const m = /listening on (http:\/\/\S+)/.exec(err)
          if (m) ok(m[1])
        })
        child.on('exit', () => fail(new Error(`exited: ${err}`)))
      })
      expect((await postJson(`${url}/v1/chat/completions`, CHAT)).status).toBe(200)
    } finally {
      child.kill('SIGKILL')
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('a ca_file that is not there stops start-up with one line naming it', async () => {
    await expect(startLoggedServer({ upstream: { ca_file: '/nonexistent/ca.pem' } })).rejects.toThrow(/upstream\.ca_file: \/nonexistent\/ca\.pem does not exist/)
  })
})

describe('an upstream that speaks only HTTP/2', () => {
  it('says that the upstream requires HTTP/2 instead of a bare TLS alert', async () => {
    const h2 = http2.createSecureServer({ key: ca.key, cert: ca.cert, allowHTTP1: false })
    await new Promise<void>((r) => h2.listen(0, '127.0.0.1', r))
    const s = await startLoggedServer({ upstream: { ca_file: ca.caFile }, providers: { openai: { base_url: `https://localhost:${(h2.address() as AddressInfo).port}/v1` } } })
    try {
      const res = await postJson(`${s.url}/v1/chat/completions`, CHAT)
      expect(res.status).toBe(502)
      expect(res.json().error.message).toMatch(/accepts only HTTP\/2 \(ERR_SSL_TLSV1_ALERT_NO_APPLICATION_PROTOCOL\)/)
      expect(await eventually(() => lastRow(s.dbFile))).toMatchObject({ error: 'upstream_unreachable: ERR_SSL_TLSV1_ALERT_NO_APPLICATION_PROTOCOL' })
    } finally {
      await s.stop()
      await new Promise<void>((r) => h2.close(() => r()))
    }
  })
})

describe('a host name that does not resolve', () => {
  it('says so in words, with what to check, and keeps ENOTFOUND in the ledger', async () => {
    const s = await startLoggedServer({ providers: { openai: { base_url: 'https://no-such-host.invalid/v1' } } })
    try {
      const res = await postJson(`${s.url}/v1/chat/completions`, CHAT)
      expect(res.status).toBe(502)
      expect(res.json().error.message).toMatch(/no-such-host\.invalid could not be resolved \(DNS ENOTFOUND\); check the host name in providers\.openai\.base_url/)
      expect(await eventually(() => lastRow(s.dbFile))).toMatchObject({ status: 502, error: 'upstream_unreachable: ENOTFOUND' })
      expect(s.lines.some((l) => l.includes('ENOTFOUND'))).toBe(true)
    } finally {
      await s.stop()
    }
  })
})

describe('a corporate proxy', () => {
  let plain: MockUpstream
  /** The two upstreams under the names only the proxy resolves. */
  let secureUrl: string
  let plainUrl: string
  beforeAll(async () => {
    plain = await startMockUpstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: JSON_BODY }))
    secureUrl = `https://${SECURE_HOST}:${new URL(tlsUp.url).port}`
    plainUrl = `http://${PLAIN_HOST}:${new URL(plain.url).port}`
  })
  afterAll(async () => {
    await plain?.close()
  })

  it('upstream.proxy with credentials: HTTPS and HTTP upstreams go through it, no_proxy hosts and this machine do not, streams still stream', async () => {
    const proxy = await startConnectProxy({ user: 'alice', password: 'p@ss word' })
    const s = await startLoggedServer({
      upstream: { ca_file: ca.caFile, proxy: `http://alice:${encodeURIComponent('p@ss word')}@127.0.0.1:${proxy.port}`, no_proxy: [`${PLAIN_HOST}:1`, `.direct.burnrate.test`] },
      providers: {
        openai: { base_url: `${secureUrl}/v1` },
        groq: { base_url: `${plainUrl}/openai/v1` },
        mistral: { base_url: `http://api.direct.burnrate.test:${new URL(plain.url).port}/v1` },
        together: { base_url: `${plain.url}/v1` },
      },
    })
    try {
      expect((await postJson(`${s.url}/v1/chat/completions`, CHAT)).status).toBe(200)
      expect(proxy.targets).toEqual([`${SECURE_HOST}:${new URL(tlsUp.url).port}`])
      // no_proxy's PLAIN_HOST:1 is another port: this one still goes through the proxy, an http
      // upstream as an ordinary request for its absolute URI (no tunnel), with the credentials.
      expect((await postJson(`${s.url}/groq/v1/chat/completions`, CHAT)).status).toBe(200)
      expect(proxy.targets).toEqual([`${SECURE_HOST}:${new URL(tlsUp.url).port}`])
      expect(proxy.forwarded).toEqual([new URL(plainUrl).host])
      expect(proxy.forwardedAuth).toEqual([`Basic ${Buffer.from('alice:p@ss word').toString('base64')}`])
      // A subdomain of a no_proxy entry is called directly, where only the proxy could resolve it.
      const direct = await postJson(`${s.url}/mistral/v1/chat/completions`, CHAT)
      expect(direct.status).toBe(502)
      expect(direct.json().error.message).toMatch(/api\.direct\.burnrate\.test could not be resolved \(DNS ENOTFOUND\)/)
      // This machine's own address (a local model server) is reached directly: the proxy cannot reach it.
      expect((await postJson(`${s.url}/together/v1/chat/completions`, CHAT)).status).toBe(200)
      expect(proxy.targets).toHaveLength(1)
      expect(proxy.forwarded).toHaveLength(1)

      // Streaming through the tunnel: the first event reaches the client before the upstream sends the rest.
      const firstSeen = await new Promise<string>((resolve, reject) => {
        const req = http.request(`${s.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
          let text = ''
          res.on('data', (c) => {
            text += c
            if (text.includes('first') && !text.includes('second')) {
              resolve(text)
              release()
            }
          })
          res.on('error', reject)
        })
        req.on('error', reject)
        req.end(JSON.stringify({ ...CHAT, stream: true }))
      })
      expect(firstSeen).toContain('first')
    } finally {
      await s.stop()
      await proxy.close()
    }
  })

  it('wrong proxy credentials: a 502 that says the proxy wants them (407)', async () => {
    const proxy = await startConnectProxy({ user: 'alice', password: 'right' })
    const s = await startLoggedServer({ upstream: { proxy: `http://alice:wrong@127.0.0.1:${proxy.port}` }, providers: { openai: { base_url: `${plainUrl}/v1` } } })
    try {
      const res = await postJson(`${s.url}/v1/chat/completions`, CHAT)
      expect(res.status).toBe(502)
      expect(res.json().error.message).toMatch(/proxy asks for credentials \(407\)/)
      expect(await eventually(() => lastRow(s.dbFile))).toMatchObject({ error: 'upstream_unreachable: PROXY_407' })
      expect(s.lines.join('\n')).not.toContain('wrong')
    } finally {
      await s.stop()
      await proxy.close()
    }
  })

  it('HTTPS_PROXY / HTTP_PROXY / NO_PROXY from the environment are honoured', async () => {
    const proxy = await startConnectProxy()
    const saved = { HTTPS_PROXY: process.env.HTTPS_PROXY, HTTP_PROXY: process.env.HTTP_PROXY, NO_PROXY: process.env.NO_PROXY }
    process.env.HTTPS_PROXY = proxy.url
    // Without a scheme, as many set it (curl reads it as http://).
    process.env.HTTP_PROXY = proxy.url.replace('http://', '')
    process.env.NO_PROXY = 'direct.burnrate.test'
    let s: Awaited<ReturnType<typeof startLoggedServer>> | undefined
    try {
      s = await startLoggedServer({
        upstream: { ca_file: ca.caFile },
        providers: {
          openai: { base_url: `${secureUrl}/v1` },
          groq: { base_url: `${plainUrl}/openai/v1` },
          mistral: { base_url: `http://direct.burnrate.test:${new URL(plain.url).port}/v1` },
          together: { base_url: `${plain.url}/v1` },
        },
      })
      expect((await postJson(`${s.url}/v1/chat/completions`, CHAT)).status).toBe(200)
      expect((await postJson(`${s.url}/groq/v1/chat/completions`, CHAT)).status).toBe(200)
      expect((await postJson(`${s.url}/mistral/v1/chat/completions`, CHAT)).status).toBe(502)
      expect((await postJson(`${s.url}/together/v1/chat/completions`, CHAT)).status).toBe(200)
      expect(proxy.targets).toEqual([`${SECURE_HOST}:${new URL(tlsUp.url).port}`])
      expect(proxy.forwarded).toEqual([new URL(plainUrl).host])
    } finally {
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k]
        else process.env[k] = v
      }
      await s?.stop()
      await proxy.close()
    }
  })
})

describe('a WebSocket upstream (Codex on /v1/responses) behind a corporate proxy', () => {
  let wss: WebSocketServer
  let plainWs: http.Server
  let plainWsUrl: string
  const USAGE = { input_tokens: 1200, input_tokens_details: { cached_tokens: 0 }, output_tokens: 40, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 1240 }

  beforeAll(async () => {
    // The Responses socket: every response.create is answered with a completed response.
    wss = new WebSocketServer({ noServer: true })
    wss.on('connection', (ws) => {
      ws.on('message', () => {
        const resp = { id: 'resp_proxy', object: 'response', model: 'gpt-4o-mini-2024-07-18' }
        ws.send(JSON.stringify({ type: 'response.created', sequence_number: 0, response: { ...resp, status: 'in_progress' } }))
        ws.send(JSON.stringify({ type: 'response.completed', sequence_number: 1, response: { ...resp, status: 'completed', usage: USAGE } }))
      })
    })
    const upgrade = (req: http.IncomingMessage, socket: import('node:stream').Duplex, head: Buffer) => wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req))
    tlsUp.server.on('upgrade', upgrade)
    plainWs = http.createServer((_q, r) => r.writeHead(404).end())
    plainWs.on('upgrade', upgrade)
    await new Promise<void>((r) => plainWs.listen(0, '127.0.0.1', r))
    plainWsUrl = `http://localhost:${(plainWs.address() as AddressInfo).port}`
  })
  afterAll(async () => {
    tlsUp.server.removeAllListeners('upgrade')
    plainWs.closeAllConnections()
    await new Promise<void>((r) => plainWs.close(() => r()))
    wss.close()
  })

  /** One response over Burnrate's WebSocket: the completed event, or how the upgrade was refused. */
  async function oneResponse(url: string, path = '/v1/responses'): Promise<{ completed: boolean } | { status: number; body: any }> {
    const ws = new WebSocket(`${url.replace(/^http/, 'ws')}${path}`, { headers: { authorization: 'Bearer sk-proj-proxied-socket-0001' } })
    return new Promise((resolve, reject) => {
      ws.on('unexpected-response', (_r, res) => {
        let text = ''
        res.on('data', (c) => (text += c))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }))
      })
      ws.on('open', () => ws.send(JSON.stringify({ type: 'response.create', model: 'gpt-4o-mini', input: 'hi' })))
      ws.on('message', (m) => {
        if (JSON.parse(String(m)).type === 'response.completed') {
          ws.close()
          resolve({ completed: true })
        }
      })
      ws.on('error', reject)
    })
  }

  it('upstream.proxy with credentials: the wss:// and ws:// upgrades are tunnelled through it (trusting upstream.ca_file), this machine is reached directly, and the response is metered', async () => {
    const proxy = await startConnectProxy({ user: 'alice', password: 'p@ss word' })
    const s = await startLoggedServer({
      upstream: { ca_file: ca.caFile, proxy: `http://alice:${encodeURIComponent('p@ss word')}@127.0.0.1:${proxy.port}` },
      providers: {
        openai: { base_url: `https://${SECURE_HOST}:${new URL(tlsUp.url).port}/v1` },
        groq: { base_url: `http://${PLAIN_HOST}:${new URL(plainWsUrl).port}/openai/v1` },
        together: { base_url: `${plainWsUrl}/v1` },
      },
    })
    try {
      expect(await oneResponse(s.url)).toEqual({ completed: true })
      expect(proxy.targets).toEqual([`${SECURE_HOST}:${new URL(tlsUp.url).port}`])
      expect(await eventually(() => lastRow(s.dbFile)?.input_tokens === 1200 && lastRow(s.dbFile))).toMatchObject({ provider: 'openai', status: 200, output_tokens: 40, error: null })
      expect(await oneResponse(s.url, '/groq/v1/responses')).toEqual({ completed: true })
      expect(proxy.targets).toEqual([`${SECURE_HOST}:${new URL(tlsUp.url).port}`, `${PLAIN_HOST}:${new URL(plainWsUrl).port}`])
      // This machine's own address: directly.
      expect(await oneResponse(s.url, '/together/v1/responses')).toEqual({ completed: true })
      expect(proxy.targets).toHaveLength(2)
    } finally {
      await s.stop()
      await proxy.close()
    }
  })

  it("the proxy's 407: a 502 that says the proxy wants credentials, as for an HTTP call", async () => {
    const proxy = await startConnectProxy({ user: 'alice', password: 'right' })
    const s = await startLoggedServer({ upstream: { ca_file: ca.caFile, proxy: `http://alice:wrong@127.0.0.1:${proxy.port}` }, providers: { openai: { base_url: `https://${SECURE_HOST}:${new URL(tlsUp.url).port}/v1` } } })
    try {
      const r = await oneResponse(s.url)
      expect(r).toMatchObject({ status: 502, body: { error: { type: 'upstream_unreachable' } } })
      expect((r as { body: any }).body.error.message).toMatch(/proxy asks for credentials \(407\)/)
      // No call was made (no ledger row): the log says why Codex cannot connect.
      expect(s.lines.some((l) => /^upstream: Could not reach openai at .* the proxy asks for credentials \(407\).*\(WebSocket\)$/.test(l))).toBe(true)
      expect(s.lines.join('\n')).not.toContain('wrong')
    } finally {
      await s.stop()
      await proxy.close()
    }
  })

  it('HTTPS_PROXY from the environment carries the upgrade too', async () => {
    const proxy = await startConnectProxy()
    const saved = process.env.HTTPS_PROXY
    process.env.HTTPS_PROXY = proxy.url
    let s: Awaited<ReturnType<typeof startLoggedServer>> | undefined
    try {
      s = await startLoggedServer({ upstream: { ca_file: ca.caFile }, providers: { openai: { base_url: `https://${SECURE_HOST}:${new URL(tlsUp.url).port}/v1` } } })
      expect(await oneResponse(s.url)).toEqual({ completed: true })
      expect(proxy.targets).toEqual([`${SECURE_HOST}:${new URL(tlsUp.url).port}`])
    } finally {
      if (saved === undefined) delete process.env.HTTPS_PROXY
      else process.env.HTTPS_PROXY = saved
      await s?.stop()
      await proxy.close()
    }
  })

  for (const from of ['HTTPS_PROXY', 'upstream.proxy'] as const) {
    it(`a SOCKS5 proxy named socks5h:// (curl's name for one that resolves the host names) in ${from} carries the calls, not ignored`, async () => {
      const socks = await startSocks5Proxy()
      const url = socks.url.replace(/^socks5:/, 'socks5h:')
      const secure = `${SECURE_HOST}:${new URL(tlsUp.url).port}`
      const saved = { HTTPS_PROXY: process.env.HTTPS_PROXY, https_proxy: process.env.https_proxy }
      delete process.env.https_proxy
      if (from === 'HTTPS_PROXY') process.env.HTTPS_PROXY = url
      let s: Awaited<ReturnType<typeof startLoggedServer>> | undefined
      try {
        s = await startLoggedServer({ upstream: { ca_file: ca.caFile, ...(from === 'upstream.proxy' ? { proxy: url } : {}) }, providers: { openai: { base_url: `https://${secure}/v1` } } })
        const r = await postJson(`${s.url}/v1/chat/completions`, CHAT)
        expect(r.status, r.text).toBe(200)
        expect(await oneResponse(s.url)).toEqual({ completed: true })
        expect(socks.targets).toEqual([secure, secure])
        expect(s.lines.join('\n')).not.toMatch(/ignored/)
      } finally {
        for (const [k, v] of Object.entries(saved)) {
          if (v === undefined) delete process.env[k]
          else process.env[k] = v
        }
        await s?.stop()
        await socks.close()
      }
    })
  }

  it('a SOCKS5 proxy (upstream.proxy: socks5://) carries the HTTP calls and the wss:// upgrade alike, the host name resolved by the proxy', async () => {
    const socks = await startSocks5Proxy()
    const secure = `${SECURE_HOST}:${new URL(tlsUp.url).port}`
    const s = await startLoggedServer({ upstream: { ca_file: ca.caFile, proxy: socks.url }, providers: { openai: { base_url: `https://${secure}/v1` } } })
    try {
      expect(await oneResponse(s.url)).toEqual({ completed: true })
      expect(socks.targets).toEqual([secure])
      const r = await postJson(`${s.url}/v1/chat/completions`, CHAT)
      expect(r.status, r.text).toBe(200)
      expect(socks.targets).toEqual([secure, secure])
    } finally {
      await s.stop()
      await socks.close()
    }
  })
})
