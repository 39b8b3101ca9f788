import { once } from 'node:events'
import zlib from 'node:zlib'
import { describe, expect, it } from 'vitest'
import { DEFAULT_MAX_REQUEST } from '../../src/main/proxy/call/request-body'
import { request } from '../support/http'
import { serverOverMockUpstream } from '../support/server'
import { lastCallId, rowsAfter } from '../providers/ledger'

/**
 * Codex logged in with ChatGPT sends its Responses calls over HTTP (SSE: when the WebSocket is
 * not used or falls back) with the body compressed: codex-rs core/src/client.rs
 * `responses_request_compression` returns Compression::Zstd when `enable_request_compression`
 * (Stable, on by default) and the login is ChatGPT and the provider is OpenAI's, so the request
 * carries `Content-Encoding: zstd`. Burnrate reads a decoded copy and forwards the body as it came.
 */
const s = serverOverMockUpstream({
  budgets: { rules: [{ api_key_pattern: 'sk-zbig-*', daily_limit_usd: 0.00005, action: 'block', reserve: 'max_tokens' }] },
})

const CWD = '/home/dev/projects/shop'
const body = {
  model: 'gpt-5-2025-08-07',
  instructions: 'You are Codex.',
  input: [
    { type: 'message', role: 'user', content: [{ type: 'input_text', text: `<environment_context>\n  <cwd>${CWD}</cwd>\n  <shell>bash</shell>\n</environment_context>` }] },
    { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'fix the bug' }] },
  ],
  stream: true,
  store: false,
  prompt_cache_key: '019a0000-0000-7000-8000-00000000abcd',
}

const CODEX = {
  'content-type': 'application/json',
  authorization: 'Bearer eyJhbGciOiJSUzI1NiJ9.chatgpt-access-token.sig',
  'chatgpt-account-id': 'acct-1234',
  'user-agent': 'codex_cli_rs/0.171.0 (Linux; x86_64) dumb',
  originator: 'codex_exec',
}

const zstd = (x: unknown): Buffer => zlib.zstdCompressSync(Buffer.from(JSON.stringify(x)))

function sse(): string {
  const base = { id: 'resp_z1', object: 'response', created_at: 1_700_000_000, model: 'gpt-5-2025-08-07', output: [], status: 'in_progress' }
  const usage = { input_tokens: 5000, input_tokens_details: { cached_tokens: 4000 }, output_tokens: 300, output_tokens_details: { reasoning_tokens: 200 }, total_tokens: 5300 }
  return [
    { type: 'response.created', sequence_number: 0, response: base },
    { type: 'response.completed', sequence_number: 1, response: { ...base, status: 'completed', usage } },
  ]
    .map((e) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`)
    .join('')
}

/** A few kilobytes of zstd that decompress to `bytes` and more (a zip bomb), packed a MiB at a time. */
async function zstdBomb(bytes: number): Promise<Buffer> {
  const packer = zlib.createZstdCompress()
  const out: Buffer[] = []
  packer.on('data', (b: Buffer) => out.push(b))
  const spaces = Buffer.alloc(1024 * 1024, 0x20)
  packer.write('{"model":"gpt-4o-mini","input":"')
  for (let n = 0; n < bytes; n += spaces.length) packer.write(spaces)
  packer.end('"}')
  await once(packer, 'end')
  return Buffer.concat(out)
}

describe('Codex (ChatGPT login) Responses call with a zstd-compressed body', () => {
  it('is attributed to its project, as the same call uncompressed is, and goes upstream byte for byte', async () => {
    s.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, body: sse() }))
    const before = await lastCallId(s.t)
    const headers = { ...CODEX, 'thread-id': '019a0000-0000-7000-8000-00000000abcd' }
    // The same call twice: plain JSON, then as Codex sends it with a ChatGPT login.
    const plain = await request(s.t.url + '/v1/responses', { method: 'POST', headers, body: JSON.stringify(body) })
    expect(plain.status).toBe(200)
    const packed = zstd(body)
    const compressed = await request(s.t.url + '/v1/responses', { method: 'POST', headers: { ...headers, 'content-encoding': 'zstd' }, body: packed })
    expect(compressed.status).toBe(200)
    const sent = s.upstream.requests.at(-1)!
    expect(sent.headers['content-encoding']).toBe('zstd')
    expect(sent.body.equals(packed)).toBe(true)
    const rows = await rowsAfter(s.t, before, 2)
    expect(rows[0].project).toBe(CWD) // plain JSON: attributed
    expect(rows[1].agent).toBe('codex')
    expect(rows[1].input_tokens).toBe(5000)
    expect(rows[1].project).toBe(CWD) // zstd body: the same call, same project
  })

  it('a stream cut before its usage is estimated from the prompt, as the same call uncompressed is', async () => {
    const created = `event: response.created\ndata: ${JSON.stringify({ type: 'response.created', sequence_number: 0, response: { id: 'resp_cut', object: 'response', model: 'gpt-5-2025-08-07', status: 'in_progress', output: [] } })}\n\n`
    s.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, chunks: [Buffer.from(created), Buffer.from('x')], resetAfterChunks: 1 }))
    const headers = { ...CODEX, 'thread-id': '019a0000-0000-7000-8000-00000000abce' }
    const big = { ...body, input: [...body.input, { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'lorem ipsum dolor sit amet '.repeat(2000) }] }] }
    const before = await lastCallId(s.t)
    await request(s.t.url + '/v1/responses', { method: 'POST', headers, body: JSON.stringify(big) }).catch(() => undefined)
    await request(s.t.url + '/v1/responses', { method: 'POST', headers: { ...headers, 'content-encoding': 'zstd' }, body: zstd(big) }).catch(() => undefined)
    const rows = await rowsAfter(s.t, before, 2)
    expect(rows[0].input_tokens).toBeGreaterThan(5000) // plain: the prompt estimated
    expect(rows[1].input_tokens).toBe(rows[0].input_tokens) // zstd: the same prompt
  })
})

describe('compressed request bodies', () => {
  const chat = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }
  const packers: [string, (b: Buffer) => Buffer][] = [
    ['gzip', zlib.gzipSync],
    ['deflate', zlib.deflateSync],
    ['br', zlib.brotliCompressSync],
    ['zstd', zlib.zstdCompressSync],
  ]

  it('are read for the model they ask for, in each encoding the answers are decoded from', async () => {
    // An answer without a model or usage: the row's model is the one the request named.
    s.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: '{}' }))
    const before = await lastCallId(s.t)
    for (const [encoding, pack] of packers) {
      const res = await request(`${s.t.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-encoding': encoding, authorization: 'Bearer sk-plain-0000000000001' },
        body: pack(Buffer.from(JSON.stringify(chat))),
      })
      expect(res.status).toBe(200)
    }
    const rows = await rowsAfter(s.t, before, packers.length)
    expect(rows.map((r) => r.model)).toEqual(packers.map(() => 'gpt-4o-mini'))
  })

  it('are held to a block rule by the model and max_output_tokens they ask for', async () => {
    const before = s.upstream.requests.length
    // 100k output tokens of gpt-5 could cost $1, far over the rule's $0.00005.
    const res = await request(`${s.t.url}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-encoding': 'zstd', authorization: 'Bearer sk-zbig-0000000000001' },
      body: zstd({ model: 'gpt-5-2025-08-07', input: 'hi', max_output_tokens: 100_000 }),
    })
    expect(res.status).toBe(429)
    expect(res.json().error).toMatchObject({ type: 'budget_exceeded', api_key_pattern: 'sk-zbig-*' })
    expect(s.upstream.requests.length).toBe(before)
  })

  it('one that decompresses past the body limit is refused with 413 and not sent upstream', async () => {
    const before = s.upstream.requests.length
    const first = await lastCallId(s.t)
    const bomb = await zstdBomb(DEFAULT_MAX_REQUEST + 1)
    expect(bomb.length).toBeLessThan(1024 * 1024)
    const res = await request(`${s.t.url}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-encoding': 'zstd', authorization: 'Bearer sk-plain-0000000000002' },
      body: bomb,
    })
    expect(res.status).toBe(413)
    expect(res.json().error.message).toMatch(/once decompressed/)
    expect(s.upstream.requests.length).toBe(before)
    expect((await rowsAfter(s.t, first, 1))[0]).toMatchObject({ status: 413, error: 'payload_too_large', cost_usd: 0 })
  })

  it('one Burnrate cannot decode goes upstream as it came, metered from the answer', async () => {
    s.upstream.setResponder(() => ({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion', model: 'gpt-4o-mini', choices: [], usage: { prompt_tokens: 12, completion_tokens: 3, total_tokens: 15 } }),
    }))
    const before = await lastCallId(s.t)
    const bodies: [string, Buffer][] = [
      ['compress', Buffer.from('not decodable by Burnrate')],
      ['zstd', Buffer.from('not zstd at all')],
    ]
    for (const [encoding, raw] of bodies) {
      const res = await request(`${s.t.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-encoding': encoding, authorization: 'Bearer sk-plain-0000000000003' },
        body: raw,
      })
      expect(res.status).toBe(200)
      const sent = s.upstream.requests.at(-1)!
      expect(sent.headers['content-encoding']).toBe(encoding)
      expect(sent.body.equals(raw)).toBe(true)
    }
    const rows = await rowsAfter(s.t, before, 2)
    expect(rows.map((r) => [r.model, r.input_tokens, r.output_tokens])).toEqual([
      ['gpt-4o-mini', 12, 3],
      ['gpt-4o-mini', 12, 3],
    ])
  })
})
