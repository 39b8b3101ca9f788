import { connect } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type TestServer, startTestServer } from '../support/server'
import { type WsUpstream, startWsUpstream } from '../support/ws-upstream'

/**
 * An upgrade whose request target carries a fragment (`#…`: no client sends one, but a raw request
 * can): the ws library refuses such an upstream URL by throwing, which must not escape the relay.
 */

let up: WsUpstream
let t: TestServer
const logged: string[] = []
const log = { debug: (m: string) => logged.push(m), info: (m: string) => logged.push(m), warn: (m: string) => logged.push(m), error: (m: string) => logged.push(m) }

beforeAll(async () => {
  up = await startWsUpstream({ onConnection: () => {} })
  t = await startTestServer({}, up.url, undefined, { log })
})
afterAll(async () => {
  await t.cleanup()
  await up.close()
})

function rawUpgrade(target: string): Promise<string> {
  const { port } = new URL(t.url)
  return new Promise((resolve, reject) => {
    const s = connect(Number(port), '127.0.0.1')
    let got = ''
    s.on('data', (d) => (got += String(d)))
    s.on('end', () => resolve(got))
    s.on('close', () => resolve(got))
    s.on('error', reject)
    s.setTimeout(3000, () => { resolve('TIMEOUT ' + got); s.destroy() })
    s.write(`GET ${target} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`)
  })
}

describe('a WebSocket upgrade with a fragment in its target', () => {
  it('is answered, and neither throws nor logs the key', async () => {
    const answer = await rawUpgrade('/gemini/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent?key=AIza-frag-secret-0001#x')
    expect(answer).toMatch(/^HTTP\/1\.1 400 /)
    expect(answer).not.toContain('AIza-frag-secret-0001')
    expect(logged.join('\n')).not.toContain('AIza-frag-secret-0001')
    // The proxy still answers.
    expect((await fetch(`${t.url}/api/health`)).status).toBeLessThan(500)
  })
})
