import http from 'node:http'
import { describe, expect, it } from 'vitest'
import { fixture, sseChunks } from '../support/fixtures'
import { eventually } from '../support/http'
import { serverOverMockUpstream } from '../support/server'
import { lastLedgerRow } from '../support/ledger-rows'

/**
 * A call whose upstream already delivered its terminal event completed, even when the client
 * hangs up before the upstream's stream ends (Codex closes as soon as it has `response.completed`):
 * it is recorded 200 with its usage, never 499 `client_aborted`.
 */

const s = serverOverMockUpstream()

function lastRow(): any {
  return lastLedgerRow(s.t.dbFile)
}

async function rowAfter(before: number): Promise<any> {
  return eventually(() => {
    const r = lastRow()
    return r && r.id > before ? r : undefined
  }, 10_000)
}

/** Posts a streaming call and hangs up as soon as the body so far contains `until`. */
function postUntil(url: string, body: unknown, until: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', headers: { 'content-type': 'application/json' }, agent: false }, (res) => {
      let seen = ''
      res.on('data', (c: Buffer) => {
        seen += c.toString('utf8')
        if (seen.includes(until)) {
          req.destroy()
          resolve(seen)
        }
      })
      res.on('end', () => resolve(seen))
    })
    req.on('error', (err) => ((err as NodeJS.ErrnoException).code === 'ECONNRESET' ? undefined : reject(err)))
    req.end(JSON.stringify(body))
  })
}

const CASES = [
  {
    name: 'OpenAI Responses (response.completed)',
    path: '/v1/responses',
    body: { model: 'gpt-4o', stream: true, input: 'hi' },
    file: 'openai-responses/responses-stream-basic.sse',
    terminal: 'response.completed',
  },
  {
    name: 'Anthropic Messages (message_stop)',
    path: '/v1/messages',
    body: { model: 'claude-3-5-sonnet-20240620', stream: true, max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] },
    file: 'anthropic/messages-stream-cache-write.sse',
    terminal: 'message_stop',
  },
  {
    name: 'OpenAI Chat Completions ([DONE])',
    path: '/v1/chat/completions',
    body: { model: 'gpt-4o-mini', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hi' }] },
    file: 'openai-chat/chat-stream-with-usage.sse',
    terminal: '[DONE]',
  },
  {
    name: 'Gemini streamGenerateContent (finishReason)',
    path: '/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse',
    body: { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] },
    file: 'gemini/stream-generate-content.sse',
    terminal: '"finishReason"',
  },
]

describe('a client that hangs up after the terminal event', () => {
  for (const c of CASES) {
    it(`${c.name}: recorded 200 with the usage of the whole stream`, async () => {
      const stream = fixture(c.file)
      const chunks = sseChunks(stream, false)
      // The whole body, as a finished call would have it.
      s.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, chunks }))
      let before = lastRow()?.id ?? 0
      await postUntil(`${s.t.url}${c.path}`, c.body, '\u0000never')
      const whole = await rowAfter(before)
      expect(whole).toMatchObject({ status: 200, error: null })
      expect(whole.input_tokens + whole.output_tokens).toBeGreaterThan(0)

      // The same body, but the upstream keeps the stream open after it: the client hangs up first.
      const open = [...chunks, Buffer.from(': never sent\n\n')]
      s.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, chunks: open, stallAfterChunks: chunks.length }))
      before = whole.id
      const seen = await postUntil(`${s.t.url}${c.path}`, c.body, c.terminal)
      expect(seen).toContain(c.terminal)
      const row = await rowAfter(before)
      expect(row).toMatchObject({
        status: 200,
        error: null,
        estimated: 0,
        input_tokens: whole.input_tokens,
        output_tokens: whole.output_tokens,
        cost_usd: whole.cost_usd,
      })
    })
  }

  it('a client that hangs up before the terminal event is still recorded 499 client_aborted', async () => {
    const chunks = sseChunks(fixture('openai-responses/responses-stream-basic.sse'), false)
    s.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, chunks, stallAfterChunks: 2 }))
    const before = lastRow()?.id ?? 0
    await postUntil(`${s.t.url}/v1/responses`, { model: 'gpt-4o', stream: true, input: 'hi' }, 'response.created')
    expect(await rowAfter(before)).toMatchObject({ status: 499, error: 'client_aborted' })
  })
})
