import http from 'node:http'
import { afterAll, describe, expect, it } from 'vitest'
import { fixture, sseChunks } from '../support/fixtures'
import { postJson } from '../support/http'
import { serverOverMockUpstream } from '../support/server'
import { answer, recorded } from '../providers/ledger'

/**
 * How close the estimate comes when a provider sends no usage, measured on the recordings that
 * do carry it: each stream is replayed through the proxy with every `usage`/`usageMetadata`
 * removed, and the estimated output tokens are compared with the count the provider billed.
 * (Input cannot be measured this way: the recordings do not include the requests.)
 *
 * Bounds, per kind of output (the README states them):
 * - `text`: plain prose from an OpenAI model (o200k/cl100k, the model's own tokenizer): within
 *   2 tokens or 15%, whichever is larger (the billed count includes 1-2 end-of-message tokens
 *   that are not in the text).
 * - `claude-text`: plain prose from Claude (cl100k x 1.2): within 5%.
 * - `other`: tool calls, server tools, and families without their own tokenizer here (Gemini):
 *   an underestimate, never below 35% of the truth (the framing of tool calls is not in the
 *   streamed text).
 * - `reasoning`: reasoning tokens are never streamed, so the estimate covers only the visible
 *   part and is far below what was billed.
 */
type Kind = 'text' | 'claude-text' | 'other' | 'reasoning'

interface Case {
  file: string
  path: string
  kind: Kind
  /** Output tokens the provider billed. */
  billed: number
}

const CASES: Case[] = [
  { file: 'openai-chat/chat-stream-with-usage.sse', path: '/v1/chat/completions', kind: 'text', billed: 9 },
  { file: 'openai-responses/responses-stream-basic.sse', path: '/v1/responses', kind: 'text', billed: 9 },
  { file: 'openai-chat/chat-stream-tool-call-with-usage.sse', path: '/v1/chat/completions', kind: 'other', billed: 15 },
  { file: 'openai-chat/azure-chat-stream-with-usage-reasoning.sse', path: '/v1/chat/completions', kind: 'reasoning', billed: 78 },
  { file: 'openai-responses/responses-stream-cached-reasoning.sse', path: '/v1/responses', kind: 'reasoning', billed: 582 },
  { file: 'anthropic/messages-stream-cache-write.sse', path: '/v1/messages', kind: 'claude-text', billed: 201 },
  { file: 'anthropic/messages-stream-cache-read.sse', path: '/v1/messages', kind: 'claude-text', billed: 221 },
  { file: 'anthropic/messages-stream-tool-use.sse', path: '/v1/messages', kind: 'other', billed: 153 },
  { file: 'anthropic/messages-stream-server-tool-cache.sse', path: '/v1/messages', kind: 'other', billed: 198 },
  { file: 'gemini/stream-generate-content.sse', path: '/gemini/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse', kind: 'other', billed: 80 },
  { file: 'gemini/stream-generate-content-tool-use-prompt.sse', path: '/gemini/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse', kind: 'other', billed: 25 },
]

function withoutUsage(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(withoutUsage)
  if (v && typeof v === 'object') {
    const out: Record<string, unknown> = {}
    for (const [k, x] of Object.entries(v)) if (k !== 'usage' && k !== 'usageMetadata') out[k] = withoutUsage(x)
    return out
  }
  return v
}

/** The recording with every usage object removed from its events (everything else as sent). */
function stripUsage(file: string): Buffer {
  const text = fixture(file).toString('utf8')
  const sep = text.includes('\r\n\r\n') ? '\r\n' : '\n'
  const lines = text.split(sep).map((line) => {
    if (!line.startsWith('data:')) return line
    const data = line.slice(5).trim()
    try {
      return `data: ${JSON.stringify(withoutUsage(JSON.parse(data)))}`
    } catch {
      return line // [DONE]
    }
  })
  return Buffer.from(lines.join(sep))
}

const s = serverOverMockUpstream()

describe('estimation accuracy against recordings that carry usage', () => {
  const measured: string[] = []
  afterAll(() => {
    console.log(`estimated vs billed output tokens:\n${measured.join('\n')}`)
  })

  for (const c of CASES) {
    it(`${c.file} (${c.kind})`, async () => {
      const stripped = stripUsage(c.file)
      expect(stripped.includes('"usage"')).toBe(false)
      expect(stripped.includes('usageMetadata')).toBe(false)
      answer(s.upstream, stripped, 'sse')
      const row = await recorded(s.t, () =>
        postJson(`${s.t.url}${c.path}`, { model: 'x', stream: true, messages: [{ role: 'user', content: 'hi' }] }, { authorization: 'Bearer sk-estimate-0000000000001' }),
      )
      expect(row.estimated).toBe(1)
      expect(row.status).toBe(200)
      const est = row.output_tokens
      const err = (est - c.billed) / c.billed
      measured.push(`  ${c.file}: ${est} vs ${c.billed} (${(err * 100).toFixed(1)}%, ${c.kind})`)
      expect(est).toBeGreaterThan(0)
      if (c.kind === 'text') expect(Math.abs(est - c.billed)).toBeLessThanOrEqual(Math.max(2, 0.15 * c.billed))
      else if (c.kind === 'claude-text') expect(Math.abs(err)).toBeLessThanOrEqual(0.05)
      else if (c.kind === 'other') {
        expect(est).toBeLessThanOrEqual(c.billed)
        expect(est).toBeGreaterThanOrEqual(0.35 * c.billed)
      } else expect(est).toBeLessThan(0.25 * c.billed)
      // An estimate is priced like a real count.
      if (row.priced) expect(row.cost_usd).toBeGreaterThan(0)
    })
  }
})

describe('a stream without usage that is cut short', () => {
  it('the client leaving mid-stream: the prompt and the output it got are estimated and priced', async () => {
    const full = fixture('openai-chat/chat-stream-no-usage.sse')
    s.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, chunks: sseChunks(full, false), delayMs: 40 }))
    const body = JSON.stringify({ model: 'gpt-3.5-turbo', stream: true, messages: [{ role: 'user', content: 'Write a haiku about the sea.' }] })
    const row = await recorded(s.t, () =>
      new Promise<void>((resolve) => {
        const req = http.request(`${s.t.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer sk-estimate-0000000000002' }, agent: false }, (res) => {
          let seen = 0
          res.on('data', () => {
            if (++seen === 8) {
              req.destroy()
              resolve()
            }
          })
        })
        req.on('error', () => resolve())
        req.end(body)
      }),
    )
    expect(row).toMatchObject({ status: 499, error: 'client_aborted', estimated: 1, priced: 1, model: 'gpt-3.5-turbo-0125' })
    // messages: 3 per message + 3 priming, plus the text
    expect(row.input_tokens).toBeGreaterThan(6)
    expect(row.output_tokens).toBeGreaterThan(0)
    expect(row.cost_usd).toBeGreaterThan(0)
  })
})
