import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixture, sseChunks } from '../support/fixtures'
import { eventually, postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { lastLedgerRow } from '../support/ledger-rows'

/**
 * The idle timeout counts silence, not the length of a stream: the timer is re-armed from the
 * latest chunk when it fires, so a slow stream that keeps sending is never cut, and a stream
 * that goes quiet is cut once the window has passed with nothing.
 */

// Wide against the chunks' spacing, so a busy machine's pauses (two test files at once on two
// cores) never make a gap of the first test a window of silence.
const IDLE_MS = 1000
const STREAM = fixture('anthropic/messages-stream-cache-write.sse')

let upstream: MockUpstream
let t: TestServer

beforeAll(async () => {
  upstream = await startMockUpstream()
  t = await startTestServer({ upstream: { idle_timeout_ms: IDLE_MS } }, upstream.url)
})
afterAll(async () => {
  await t.cleanup()
  await upstream.close()
})

function lastRow(): any {
  return lastLedgerRow(t.dbFile)
}

async function rowAfter(before: number): Promise<any> {
  return eventually(() => {
    const r = lastRow()
    return r && r.id > before ? r : undefined
  })
}

describe('idle timeout on a streaming response', () => {
  it('lets a stream whose chunks come closer together than the window run far longer than it', async () => {
    // The stream's 39 chunks, 80 ms apart: about 3 windows in all, never one window of silence.
    const chunks = sseChunks(STREAM, false)
    upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, chunks, delayMs: 80 }))
    const before = lastRow()?.id ?? 0
    const res = await postJson(`${t.url}/v1/messages`, { model: 'claude-3-5-sonnet-20240620', stream: true, max_tokens: 10, messages: [] })
    expect(res.status).toBe(200)
    expect(res.body.equals(STREAM)).toBe(true)
    expect(await rowAfter(before)).toMatchObject({ status: 200, error: null, input_tokens: 4 + 1165, output_tokens: 201 })
  })

  it('cuts a stream that goes silent for the whole window, after it has run longer than the window', async () => {
    const chunks = sseChunks(STREAM, false)
    // Chunks 100 ms apart for a while (past one window), then silence.
    upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, chunks, delayMs: 100, stallAfterChunks: 15 }))
    const before = lastRow()?.id ?? 0
    const res = await postJson(`${t.url}/v1/messages`, { model: 'claude-3-5-sonnet-20240620', stream: true, max_tokens: 10, messages: [] }).catch(
      (err: Error) => err,
    )
    // The client's stream is cut (the headers were out), so the request fails or ends short.
    if (!(res instanceof Error)) expect(res.body.equals(STREAM)).toBe(false)
    expect(await rowAfter(before)).toMatchObject({ status: 504, error: 'upstream_stalled' })
  })
})
