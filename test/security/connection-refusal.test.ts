import http from 'node:http'
import net from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixture } from '../support/fixtures'
import { eventually, openConnections, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'

let upstream: MockUpstream
let t: TestServer
beforeAll(async () => {
  upstream = await startMockUpstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('openai-chat/chat-nonstream-cached.json') }))
  t = await startTestServer({ server: { max_connections: 10 } }, upstream.url)
})
afterAll(async () => {
  await t?.cleanup()
  await upstream?.close()
})

const port = (): number => Number(new URL(t.url).port)
const CHAT = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'refused-marker' }] })

/** Ten uploads with their headers in and their bodies still coming: every connection busy. */
async function holdEveryConnection(): Promise<http.ClientRequest[]> {
  let started = 0
  const count = () => started++
  t.server.http.on('request', count)
  const uploads: http.ClientRequest[] = []
  for (let i = 0; i < 10; i++) {
    const req = http.request(`${t.url}/v1/chat/completions`, {
      method: 'POST',
      agent: false,
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-holder-000000001', 'content-length': String(CHAT.length + 10) },
    })
    req.on('error', () => {})
    req.write(CHAT.slice(0, 5))
    uploads.push(req)
  }
  await eventually(() => started === 10, 10_000)
  t.server.http.off('request', count)
  return uploads
}

/** A whole request in one write on a new connection; what the server said before it closed it. */
function oneWrite(text: string): Promise<string> {
  return new Promise((resolve) => {
    let got = ''
    const s = net.connect(port(), '127.0.0.1', () => s.write(text))
    s.on('data', (d) => (got += d.toString()))
    s.on('close', () => resolve(got))
    s.on('error', () => {})
  })
}

describe('a connection refused 503 at server.max_connections', () => {
  it('never has the request it sent with its first packet handled: nothing goes upstream', async () => {
    const uploads = await holdEveryConnection()
    let handled = 0
    const count = () => handled++
    t.server.http.on('request', count)
    const before = upstream.requests.length
    try {
      const answers: string[] = []
      for (let i = 0; i < 20; i++) {
        answers.push(
          await oneWrite(
            `POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:${port()}\r\nContent-Type: application/json\r\n` +
              `Authorization: Bearer sk-refused-000000001\r\nContent-Length: ${CHAT.length}\r\n\r\n${CHAT}`,
          ),
        )
      }
      for (const a of answers) expect(a).toMatch(/^HTTP\/1\.1 503 /)
      expect(handled).toBe(0)
    } finally {
      t.server.http.off('request', count)
      for (const u of uploads) u.destroy()
    }
    // No refused connection is left counted: once the held ones close, calls go through again.
    await eventually(async () => (await openConnections(t.server.http)) === 0, 10_000)
    for (let i = 0; i < 12; i++) expect((await request(`${t.url}/api/health`)).status).toBe(200)
    const after = await request(`${t.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-after-000000001' },
      body: CHAT,
    })
    expect(after.status).toBe(200)
    // Forwarded, a refused call would have reached the upstream before this later one did.
    const keys = upstream.requests.slice(before).map((r) => r.headers.authorization)
    expect(keys).toEqual(['Bearer sk-after-000000001'])
  })
})
