import http from 'node:http'
import net from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixture } from '../support/fixtures'
import { eventually } from '../support/http'
import { type MockUpstream, sleep, startMockUpstream } from '../support/mock-upstream'
import { startLoggedServer } from './support'
import { ledgerRows } from '../support/ledger-rows'

/** Whose side failed: a slow client is not a stalled upstream; a call cut with its connection by Burnrate was not abandoned by its client. */

const JSON_BODY = fixture('openai-chat/chat-nonstream-cached.json')
// The idle window the tests wait out. The mock upstream's own gaps (200 and 300 ms) stay well
// inside it, so a busy machine's pauses in the upstream (or in Burnrate) are not taken for a stall.
const IDLE_MS = 1000

/** An OpenAI stream of `n` events of 64 KB each. */
function bigStream(n: number): Buffer[] {
  const text = 'x'.repeat(64 * 1024)
  const ev = Buffer.from(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: text } }] })}\n\n`)
  return [...Array.from({ length: n }, () => ev), Buffer.from('data: [DONE]\n\n')]
}

let upstream: MockUpstream
let s: Awaited<ReturnType<typeof startLoggedServer>>
beforeAll(async () => {
  upstream = await startMockUpstream((req) => {
    const body = JSON.parse(req.body.toString('utf8') || '{}')
    if (body.user === 'big') return { status: 200, headers: { 'content-type': 'text/event-stream' }, chunks: bigStream(320) }
    if (body.user === 'slow') return { status: 200, headers: { 'content-type': 'text/event-stream' }, chunks: bigStream(4), delayMs: 300 }
    if (body.user === 'reset') return { status: 200, headers: { 'content-type': 'text/event-stream' }, chunks: bigStream(4), delayMs: 200, resetAfterChunks: 2 }
    return { status: 200, headers: { 'content-type': 'application/json' }, body: JSON_BODY }
  })
  s = await startLoggedServer({ upstream: { idle_timeout_ms: IDLE_MS }, providers: { openai: { base_url: `${upstream.url}/v1` } } })
})
afterAll(async () => {
  await s?.stop()
  await upstream?.close()
})

/** The calls recorded for `session` (each test its own, so one test's late row is not read as another's). */
function rows(session: string): any[] {
  return ledgerRows(s.dbFile, `session = '${session}'`)
}

function chat(user: string, stream = true): string {
  return JSON.stringify({ model: 'gpt-4o-mini', stream, user, messages: [{ role: 'user', content: 'hi' }] })
}

function headers(session: string): http.OutgoingHttpHeaders {
  return { 'content-type': 'application/json', 'x-burnrate-session': session }
}

describe('blame', () => {
  it('a client that stops reading for several idle windows, then reads on, gets all of it; recorded 200, not 504 upstream_stalled', async () => {
    const session = 'blame-slow-reader'
    const expected = Buffer.concat(bigStream(320)).length
    const got = await new Promise<number>((resolve, reject) => {
      const req = http.request(`${s.url}/v1/chat/completions`, { method: 'POST', headers: headers(session), agent: false }, (res) => {
        let n = 0
        let paused = false
        res.on('data', (c: Buffer) => {
          n += c.length
          if (!paused) {
            // A slow reader: busy for three idle windows after its first read, while every buffer fills.
            paused = true
            res.pause()
            void sleep(IDLE_MS * 3).then(() => res.resume())
          }
        })
        res.on('end', () => resolve(n))
        res.on('error', reject)
      })
      req.on('error', reject)
      req.end(chat('big'))
    })
    expect(got).toBe(expected)
    expect(await eventually(() => rows(session)[0])).toMatchObject({ status: 200, error: null })
    expect(rows(session)).toHaveLength(1)
  })

  it('a client that stops reading and then hangs up is recorded as its side (499 client_aborted), not as a stalled upstream', async () => {
    const session = 'blame-hangs-up'
    let response: http.IncomingMessage | undefined
    const req = http.request(`${s.url}/v1/chat/completions`, { method: 'POST', headers: headers(session), agent: false }, (res) => {
      response = res
      res.pause()
    })
    req.on('error', () => {})
    req.end(chat('big'))
    await eventually(() => response)
    await sleep(IDLE_MS * 3)
    // Still under way: the upstream is not blamed for the client's silence.
    expect(rows(session)).toEqual([])
    req.destroy()
    expect(await eventually(() => rows(session)[0])).toMatchObject({ status: 499, error: 'client_aborted' })
  })

  it('a call pipelined behind a stream Burnrate had to cut is recorded with its upstream status, not 499', async () => {
    const session = 'blame-pipelined'
    const port = Number(new URL(s.url).port)
    const sock = net.connect(port, '127.0.0.1')
    sock.on('error', () => {})
    sock.on('data', () => {})
    const request = (body: string) =>
      `POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nX-Burnrate-Session: ${session}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
    sock.write(request(chat('reset')) + request(chat('slow')))
    const recorded = await eventually(() => (rows(session).length >= 2 ? rows(session) : undefined), 20_000)
    sock.destroy()
    // The first stream is reset by its upstream and cut; the second was answered 200 and still streaming.
    const cut = recorded!.find((r) => r.error === 'upstream_reset')
    const behind = recorded!.find((r) => r !== cut)
    expect(cut).toMatchObject({ status: 502, error: 'upstream_reset' })
    expect(behind).toMatchObject({ status: 200, error: 'connection_cut_by_burnrate' })
  })
})
