import net from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { recorded } from '../providers/ledger'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'

/**
 * The `X-Burnrate-*` labels a person fills in, with non-ASCII values, through a running server:
 * curl, Go and Rust send them as UTF-8 bytes, which Node reads as Latin-1 (`café` arrived as
 * `cafÃ©`, so a rule scoped to the tenant `café` never matched it). A Latin-1 sender's bytes
 * (not valid UTF-8) are read as Latin-1.
 */

/** One raw HTTP/1.1 request, its header bytes in `encoding`; resolves with the status. */
function rawPost(url: string, headers: Record<string, string>, encoding: BufferEncoding): Promise<number> {
  const u = new URL(url)
  const body = Buffer.from(JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }))
  return new Promise((resolve, reject) => {
    const sock = net.connect(Number(u.port), u.hostname, () => {
      const lines = ['POST /v1/chat/completions HTTP/1.1', `Host: ${u.host}`, 'Connection: close', 'Content-Type: application/json', `Content-Length: ${body.length}`]
      for (const [k, v] of Object.entries(headers)) lines.push(`${k}: ${v}`)
      sock.write(Buffer.concat([Buffer.from(lines.join('\r\n') + '\r\n\r\n', encoding), body]))
    })
    let got = ''
    sock.on('data', (d) => (got += d.toString('latin1')))
    sock.on('end', () => resolve(Number(/^HTTP\/1\.1 (\d+)/.exec(got)?.[1] ?? 0)))
    sock.on('error', reject)
  })
}

let upstream: MockUpstream
let t: TestServer
beforeAll(async () => {
  const answer = JSON.stringify({
    id: 'chatcmpl-1', object: 'chat.completion', model: 'gpt-4o-mini',
    choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 1000, completion_tokens: 1000, total_tokens: 2000 },
  })
  upstream = await startMockUpstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: answer }))
  t = await startTestServer({ budgets: { rules: [{ api_key_pattern: '*', tenant: 'café-équipe', daily_limit_usd: 0, action: 'block' }] } }, upstream.url)
})
afterAll(async () => {
  await t.cleanup()
  await upstream.close()
})

describe('non-ASCII X-Burnrate-* labels', () => {
  it('sent as UTF-8: recorded as sent, and a block rule scoped to the tenant refuses the call', async () => {
    let status = 0
    const row = await recorded(t, async () => {
      status = await rawPost(
        t.url,
        { Authorization: 'Bearer sk-proj-unicode-000000000001', 'X-Burnrate-Tenant': 'café-équipe', 'X-Burnrate-Agent': 'nightly-bücher', 'X-Burnrate-Session': 'sprint-日本', 'X-Burnrate-Project': '/home/zoë/app' },
        'utf8',
      )
    })
    expect(status).toBe(429)
    expect(row).toMatchObject({ tenant: 'café-équipe', agent: 'nightly-bücher', session: 'sprint-日本', project: '/home/zoë/app' })
  })

  it('sent as Latin-1 (not valid UTF-8): read as Latin-1', async () => {
    let status = 0
    const row = await recorded(t, async () => {
      status = await rawPost(t.url, { Authorization: 'Bearer sk-proj-unicode-000000000002', 'X-Burnrate-Tenant': 'café-équipe', 'X-Burnrate-Agent': 'bücher' }, 'latin1')
    })
    expect(status).toBe(429)
    expect(row).toMatchObject({ tenant: 'café-équipe', agent: 'bücher' })
  })
})
