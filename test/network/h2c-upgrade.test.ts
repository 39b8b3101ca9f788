import net from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually } from '../support/http'
import { lastLedgerRow } from '../support/ledger-rows'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'

/**
 * A client that offers HTTP/2 over cleartext with its POST (`Connection: Upgrade, HTTP2-Settings`,
 * `Upgrade: h2c`): Java's java.net.http.HttpClient does by default on an http:// address (the
 * LangChain4j clients), as does curl --http2. The offer is only an offer: the call is answered in
 * HTTP/1.1, with its body sent upstream and metered, not forwarded empty.
 */

const ANSWER = JSON.stringify({
  id: 'chatcmpl-h2c', object: 'chat.completion', created: 1, model: 'gpt-4o-mini',
  choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 12, completion_tokens: 1, total_tokens: 13 },
})

let up: MockUpstream
let t: TestServer
beforeAll(async () => {
  up = await startMockUpstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: ANSWER }))
  t = await startTestServer({}, up.url)
})
afterAll(async () => {
  await t.cleanup()
  await up.close()
})

describe('a POST that offers an upgrade to h2c', () => {
  it('is answered in HTTP/1.1 with its body sent upstream, and metered', async () => {
    const port = Number(new URL(t.url).port)
    const body = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })
    const head =
      `POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n` +
      `HTTP2-Settings: AAEAAEAAAAIAAAABAAMAAABkAAQBAAAAAAUAAEAA\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`
    const answer = await new Promise<string>((resolve, reject) => {
      const s = net.connect(port, '127.0.0.1', () => s.write(head + body))
      let text = ''
      s.on('data', (c) => {
        text += c
        // The whole answer is in (its body is ANSWER): the connection is let go.
        if (text.endsWith(ANSWER)) s.destroy()
      })
      s.on('close', () => resolve(text))
      s.on('error', reject)
    })
    expect(answer.startsWith('HTTP/1.1 200')).toBe(true)
    expect(answer.endsWith(ANSWER)).toBe(true)
    expect(up.requests.at(-1)?.body.toString()).toBe(body)
    const row = await eventually(() => lastLedgerRow(t.dbFile))
    expect(row).toMatchObject({ status: 200, model: 'gpt-4o-mini', input_tokens: 12, output_tokens: 1 })
  })
})
