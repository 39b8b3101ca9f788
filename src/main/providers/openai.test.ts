import { afterEach, describe, expect, it, vi } from 'vitest'
import { fixture, fixtureFiles } from '../../../test/support/fixtures'
import { OutputText } from '../metering/output-text'
import { SseParser } from '../metering/sse'
import { azure, inspectAzure } from './azure'
import { openai } from './openai'
import { inspectOpenAI, openaiEndpointOf } from './openai-endpoints'
import { OpenAIMeter } from './openai-meter'
import { mayCarryUsage } from './openai-stream-events'

describe('OpenAI: the Batch API', () => {
  it('names its batches and file reads; following a batch and reading a file are free, creating one is not', () => {
    const shape = (method: string, path: string) => inspectOpenAI({ method, path, query: '', headers: {}, body: undefined })
    expect(shape('POST', '/batches')).toMatchObject({ endpoint: 'batches.create', billable: false })
    expect(shape('POST', '/batches').free).toBeUndefined()
    expect(shape('GET', '/batches')).toMatchObject({ endpoint: 'batches.list', free: true })
    expect(shape('GET', '/batches/batch_1')).toMatchObject({ endpoint: 'batches.retrieve', free: true })
    expect(shape('POST', '/batches/batch_1/cancel')).toMatchObject({ endpoint: 'batches.cancel', free: true })
    expect(shape('GET', '/files/file-abc/content')).toMatchObject({ endpoint: 'files.content', free: true, lines: true })
    expect(shape('GET', '/files/file-abc')).toMatchObject({ endpoint: 'other' })
    expect(shape('DELETE', '/batches/batch_1').endpoint).toBe('other')
  })
})

const usage = { prompt_tokens: 100, completion_tokens: 10 }
/** The usage an OpenAI meter finds in a Chat Completions answer: made as OpenAI's and Azure's are (tiers read), or as the others' are. */
function json(body: object, openaiTiers = true) {
  const m = new OpenAIMeter({ endpoint: 'chat.completions', openaiTiers })
  m.json(body)
  return m.result().usage
}

describe('OpenAI: the Flex tier is billed at Batch API rates', () => {
  it('marks the usage when the answer says flex served it, in JSON and in streams; never for other tiers or providers', () => {
    expect(json({ service_tier: 'flex', usage })?.batch).toBe(true)
    expect(json({ service_tier: 'default', usage })?.batch).toBeUndefined()
    expect(json({ service_tier: 'priority', usage })?.batch).toBeUndefined()
    expect(json({ usage })?.batch).toBeUndefined()
    expect(json({ service_tier: 'flex', usage }, false)?.batch).toBeUndefined()
    const chat = new OpenAIMeter({ endpoint: 'chat.completions', openaiTiers: true })
    chat.event('', JSON.stringify({ service_tier: 'flex', choices: [{ delta: { content: 'hi' }, finish_reason: 'stop' }] }))
    chat.event('', JSON.stringify({ service_tier: 'flex', choices: [], usage }))
    expect(chat.result().usage).toMatchObject({ input_tokens: 100, output_tokens: 10, batch: true })
    const responses = new OpenAIMeter({ endpoint: 'responses', openaiTiers: true })
    responses.event('response.completed', JSON.stringify({ type: 'response.completed', response: { id: 'resp_1', service_tier: 'flex', usage: { input_tokens: 5, output_tokens: 2 } } }))
    expect(responses.result().usage?.batch).toBe(true)
  })
})

describe('OpenAI: Fast mode (formerly Priority processing) is marked for its fast price', () => {
  it('marks the usage when the answer says priority or fast served it, in JSON and in streams; never for other tiers or providers', () => {
    expect(json({ service_tier: 'priority', usage })?.fast).toBe(true)
    expect(json({ service_tier: 'fast', usage })?.fast).toBe(true)
    expect(json({ service_tier: 'priority', usage })?.batch).toBeUndefined()
    expect(json({ service_tier: 'default', usage })?.fast).toBeUndefined()
    expect(json({ service_tier: 'flex', usage })?.fast).toBeUndefined()
    expect(json({ service_tier: 'priority', usage }, false)?.fast).toBeUndefined()
    const responses = new OpenAIMeter({ endpoint: 'responses', openaiTiers: true })
    responses.event('response.completed', JSON.stringify({ type: 'response.completed', response: { id: 'resp_1', service_tier: 'priority', usage: { input_tokens: 5, output_tokens: 2 } } }))
    expect(responses.result().usage).toMatchObject({ input_tokens: 5, output_tokens: 2, fast: true })
  })
})

describe('OpenAI: what a stream cut before its usage was billed for (MeterResult.billedSoFar)', () => {
  const ev = (m: OpenAIMeter, type: string, data: object) => m.event(type, JSON.stringify({ type, ...data }))
  const done = (m: OpenAIMeter, item: object, i: number) => ev(m, 'response.output_item.done', { output_index: i, item })

  it('the tier the stream named, else the one the request explicitly asked for; none for auto or other providers', () => {
    const cut = (requestTier: unknown, named?: string, openaiTiers = true) => {
      const m = new OpenAIMeter({ endpoint: 'responses', openaiTiers, requestTier })
      ev(m, 'response.created', { response: { id: 'resp_1', service_tier: named } })
      return m.result().billedSoFar
    }
    expect(cut(undefined, 'priority')).toEqual({ fast: true })
    expect(cut('auto', 'flex')).toEqual({ batch: true })
    expect(cut('priority')).toEqual({ fast: true })
    expect(cut('fast', 'auto')).toEqual({ fast: true })
    expect(cut('flex')).toEqual({ batch: true })
    expect(cut('priority', 'default')).toBeUndefined()
    expect(cut('auto')).toBeUndefined()
    expect(cut('default')).toBeUndefined()
    expect(cut('priority', 'priority', false)).toBeUndefined()
  })

  it('counts each completed search once by id, not an open_page; a stream that ends with its usage counts its terminal output instead', () => {
    const m = new OpenAIMeter({ endpoint: 'responses', openaiTiers: true })
    ev(m, 'response.created', { response: { id: 'resp_1', tools: [{ type: 'web_search_preview' }] } })
    done(m, { id: 'ws_1', type: 'web_search_call', status: 'completed', action: { type: 'search' } }, 0)
    done(m, { id: 'ws_1', type: 'web_search_call', status: 'completed', action: { type: 'search' } }, 0)
    done(m, { id: 'ws_2', type: 'web_search_call', status: 'completed', action: { type: 'open_page' } }, 1)
    done(m, { id: 'fs_1', type: 'file_search_call', status: 'completed' }, 2)
    done(m, { id: 'msg_1', type: 'message', content: [{ type: 'output_text', text: 'no "web_search_call" here' }] }, 3)
    expect(m.result()).toMatchObject({ usage: null, billedSoFar: { web_searches: 1, storage_searches: 1, web_search_preview: true } })
    ev(m, 'response.completed', { response: { id: 'resp_1', output: [{ id: 'ws_1', type: 'web_search_call', action: { type: 'search' } }], usage: { input_tokens: 5, output_tokens: 2 } } })
    const r = m.result()
    expect(r.billedSoFar).toBeUndefined()
    expect(r.usage).toMatchObject({ web_searches: 1, storage_searches: 0 })
  })

  it('a plain stream cut before its usage carries nothing more', () => {
    const m = new OpenAIMeter({ endpoint: 'responses', openaiTiers: true, requestTier: 'auto' })
    ev(m, 'response.created', { response: { id: 'resp_1', service_tier: 'auto', tools: [] } })
    ev(m, 'response.output_text.delta', { delta: 'Hello' })
    expect(m.result()).toMatchObject({ usage: null, outputText: 'Hello' })
    expect(m.result().billedSoFar).toBeUndefined()
  })
})

describe('OpenAI and Azure OpenAI: Fast mode asked for', () => {
  it('a request with service_tier priority or fast is marked for budgets; other tiers and other providers are not', () => {
    const req = (body: unknown, path = '/chat/completions') => ({ method: 'POST', path, query: '', headers: {}, body })
    expect(openai.inspect(req({ model: 'gpt-5', service_tier: 'priority', messages: [] })).fast).toBe(true)
    expect(openai.inspect(req({ model: 'gpt-5', service_tier: 'fast', messages: [] })).fast).toBe(true)
    expect(openai.inspect(req({ model: 'gpt-5', service_tier: 'flex', messages: [] })).fast).toBeUndefined()
    expect(azure.inspect(req({ service_tier: 'priority', messages: [] }, '/openai/deployments/gpt5/chat/completions'))).toMatchObject({ model: 'gpt5', fast: true })
    expect(inspectOpenAI(req({ model: 'llama', service_tier: 'priority', messages: [] })).fast).toBeUndefined()
  })
})

describe('OpenAI: reads of a stored response', () => {
  it('names the retrieve and cancel of a response, and nothing else under /responses/{id}', () => {
    expect(openaiEndpointOf('GET', '/responses/resp_1')).toBe('responses.retrieve')
    expect(openaiEndpointOf('POST', '/responses/resp_1/cancel')).toBe('responses.cancel')
    expect(openaiEndpointOf('GET', '/responses/resp_1/input_items')).toBe('other')
    expect(openaiEndpointOf('DELETE', '/responses/resp_1')).toBe('other')
    expect(openaiEndpointOf('GET', '/responses/resp_1/cancel')).toBe('other')
    expect(openaiEndpointOf('POST', '/responses')).toBe('responses')
    expect(openaiEndpointOf('POST', '/responses/compact')).toBe('responses.compact')
    expect(openaiEndpointOf('GET', '/responses')).toBe('other')
    const shape = inspectOpenAI({ method: 'GET', path: '/responses/resp_1', query: 'stream=true', headers: {}, body: undefined })
    expect(shape).toMatchObject({ endpoint: 'responses.retrieve', billable: false, free: true })
    expect(inspectOpenAI({ method: 'POST', path: '/responses', query: '', headers: {}, body: { model: 'o3-pro', background: true } }).free).toBeUndefined()
    // Azure OpenAI's v1 API and its api-version paths name them alike.
    for (const path of ['/openai/v1/responses/resp_1', '/openai/responses/resp_1']) {
      expect(inspectAzure({ method: 'GET', path, query: '', headers: {}, body: undefined }, {})).toMatchObject({ endpoint: 'responses.retrieve', billable: false, free: true })
    }
    expect(inspectAzure({ method: 'POST', path: '/openai/v1/responses/resp_1/cancel', query: '', headers: {}, body: undefined }, {})).toMatchObject({
      endpoint: 'responses.cancel', billable: false, free: true,
    })
    // So do they the Batch API's files and batches, free for budget rules as on OpenAI.
    const get = (path: string) => inspectAzure({ method: 'GET', path, query: '', headers: {}, body: undefined }, {})
    expect(get('/openai/v1/files/file-1/content')).toEqual(expect.objectContaining({ endpoint: 'files.content', billable: false, free: true, lines: true }))
    expect(get('/openai/files/file-1/content')).toEqual(expect.objectContaining({ endpoint: 'files.content', billable: false, free: true, lines: true }))
    expect(get('/openai/v1/batches/batch_1')).toMatchObject({ endpoint: 'batches.retrieve', billable: false, free: true })
    expect(get('/openai/batches')).toMatchObject({ endpoint: 'batches.list', billable: false, free: true })
  })

  const usage = { input_tokens: 10, output_tokens: 20, output_tokens_details: { reasoning_tokens: 5 } }
  const read = (body: unknown) => {
    const m = new OpenAIMeter({ endpoint: 'responses.retrieve' })
    m.json(body)
    return m.result()
  }

  it("gives a finished background response's usage to its creating call, never to the read", () => {
    const r = read({ id: 'resp_1', object: 'response', status: 'completed', background: true, model: 'o3-pro', usage })
    expect(r.usage).toBeNull()
    expect(r.responseId).toBe('resp_1')
    expect(r.backgroundUsage).toMatchObject({ input_tokens: 10, output_tokens: 20, reasoning_tokens: 5 })
  })

  it('gives nothing while the response runs, nor for a response not created in the background', () => {
    expect(read({ id: 'resp_1', object: 'response', status: 'in_progress', background: true, usage: null }).backgroundUsage).toBeUndefined()
    const fg = read({ id: 'resp_1', object: 'response', status: 'completed', background: false, usage })
    expect(fg.usage).toBeNull()
    expect(fg.backgroundUsage).toBeUndefined()
  })

  it('reads a failed response as nothing billed, a cancelled one without usage as unknown', () => {
    expect(read({ id: 'r', object: 'response', status: 'failed', background: true, usage: null }).backgroundUsage).toMatchObject({ input_tokens: 0, output_tokens: 0 })
    expect(read({ id: 'r', object: 'response', status: 'cancelled', background: true, usage: null }).backgroundUsage).toBeUndefined()
  })

  it('takes a streamed read from its terminal event', () => {
    const m = new OpenAIMeter({ endpoint: 'responses.retrieve' })
    const ev = (type: string, response: object) => m.event(type, JSON.stringify({ type, response }))
    ev('response.in_progress', { id: 'resp_2', status: 'in_progress', background: true, usage: null })
    m.event('response.output_text.delta', JSON.stringify({ type: 'response.output_text.delta', delta: 'hello' }))
    expect(m.result().backgroundUsage).toBeUndefined()
    ev('response.completed', { id: 'resp_2', status: 'completed', background: true, usage })
    expect(m.result()).toMatchObject({ usage: null, responseId: 'resp_2', complete: true, backgroundUsage: { input_tokens: 10, output_tokens: 20 } })
  })

  it('meters a background POST that streams to its end as any call (its own usage)', () => {
    const m = new OpenAIMeter({ endpoint: 'responses' })
    m.event('response.completed', JSON.stringify({ type: 'response.completed', response: { id: 'resp_3', status: 'completed', background: true, usage } }))
    expect(m.result().usage).toMatchObject({ input_tokens: 10, output_tokens: 20 })
    expect(m.result().backgroundUsage).toBeUndefined()
  })
})

describe('OpenAI: a Responses stream cut before its terminal event', () => {
  const delta = (type: string, text: string, seq: number) => JSON.stringify({ type, sequence_number: seq, item_id: 'msg_1', output_index: 0, content_index: 0, delta: text, logprobs: [] })
  const created = JSON.stringify({ type: 'response.created', response: { id: 'resp_1', model: 'gpt-5', status: 'in_progress', usage: null } })

  it('estimates from every text delta in the order they came, however they were named, and past the bound on unread deltas', () => {
    const m = new OpenAIMeter({ endpoint: 'responses' })
    m.event('response.created', created)
    const parts: string[] = []
    // Enough deltas to pass MAX_PENDING_DELTA_CHARS (1M characters of events) several times.
    for (let i = 0; i < 30_000; i++) {
      const t = `w${i} “é” `
      parts.push(t)
      const type = i % 3 === 0 ? 'response.function_call_arguments.delta' : 'response.output_text.delta'
      // Every 1000th arrives without its event's name (a server that sends none): read in order all the same.
      m.event(i % 1000 === 7 ? 'message' : type, delta(type, t, i))
    }
    // A reasoning summary counts too: a floor for the hidden reasoning it sums up, billed as output.
    m.event('response.reasoning_summary_text.delta', delta('response.reasoning_summary_text.delta', 'summed up', 30_001))
    parts.push('summed up')
    // An event that streams no text of the answer is not read.
    m.event('response.output_text.annotation.added', JSON.stringify({ type: 'response.output_text.annotation.added', delta: 'not text' }))
    // What is held unread stays under its bound (memory flat however long the stream).
    expect((m as unknown as { text: { deltaChars: number } }).text.deltaChars).toBeLessThanOrEqual(1_000_000)
    const r = m.result()
    expect(r.usage).toBeNull()
    expect(r.model).toBe('gpt-5')
    expect(r.responseId).toBe('resp_1')
    expect(r.outputText).toBe(parts.join(''))
  })

  it('reads no delta once the terminal event gave the usage; a delta-named event that carries a usage is read as any event', () => {
    const m = new OpenAIMeter({ endpoint: 'responses' })
    m.event('response.created', created)
    m.event('response.output_text.delta', delta('response.output_text.delta', 'Hello', 1))
    m.event('response.completed', JSON.stringify({ type: 'response.completed', response: { id: 'resp_1', model: 'gpt-5', status: 'completed', usage: { input_tokens: 12, output_tokens: 3, total_tokens: 15 } } }))
    const r = m.result()
    expect(r).toMatchObject({ complete: true, outputText: undefined })
    expect(r.usage).toMatchObject({ input_tokens: 12, output_tokens: 3 })

    const odd = new OpenAIMeter({ endpoint: 'responses' })
    odd.event('response.output_text.delta', JSON.stringify({ type: 'response.completed', response: { id: 'resp_2', status: 'completed', usage: { input_tokens: 5, output_tokens: 1, total_tokens: 6 } } }))
    expect(odd.result()).toMatchObject({ complete: true, responseId: 'resp_2', usage: { input_tokens: 5, output_tokens: 1 } })
    // A key spelled with \u escapes is read too.
    const escaped = new OpenAIMeter({ endpoint: 'responses' })
    escaped.event('response.output_text.delta', '{"type":"response.completed","\\u0072esponse":{"id":"resp_3","status":"completed","\\u0075sage":{"input_tokens":7,"output_tokens":2,"total_tokens":9}}}')
    expect(escaped.result()).toMatchObject({ complete: true, responseId: 'resp_3', usage: { input_tokens: 7, output_tokens: 2 } })
  })
})

describe('OpenAI: a Chat Completions stream parses only the chunks that can change the result', () => {
  afterEach(() => vi.restoreAllMocks())

  const eventsOf = (body: Buffer | string) => {
    const out: [string, string][] = []
    const p = new SseParser((e, d) => out.push([e, d]))
    p.write(Buffer.from(body))
    p.end()
    return out
  }
  const meter = (endpoint: string | undefined, events: [string, string][]) => {
    const m = new OpenAIMeter({ endpoint, openaiTiers: true })
    for (const [e, d] of events) m.event(e, d)
    return m.result()
  }
  // The reference: a meter told no endpoint parses every chunk, as every release before this did.
  const everyChunk = (events: [string, string][]) => meter(undefined, events)

  /** A stream whose count runs in every chunk that has choices (vLLM's continuous usage stats), usage null in its first chunks. */
  const running = [
    { id: 'cmpl-1', model: 'llama', choices: [{ index: 0, delta: { role: 'assistant', content: '' } }], usage: null },
    { id: 'cmpl-1', model: 'llama', choices: [{ index: 0, delta: { content: 'One ' } }], usage: null },
    { id: 'cmpl-1', model: 'llama', choices: [{ index: 0, delta: { content: 'two ' } }], usage: { prompt_tokens: 7, completion_tokens: 2, total_tokens: 9 } },
    { id: 'cmpl-1', model: 'llama', choices: [{ index: 0, delta: { content: 'three' } }], usage: { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 } },
    { id: 'cmpl-1', model: 'llama', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }], usage: { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 } },
  ].map((c) => `data: ${JSON.stringify(c)}\n\n`).join('') + 'data: [DONE]\n\n'

  it('finds what parsing every chunk finds, for every recorded stream whole and cut after each chunk', () => {
    const streams = fixtureFiles('openai-chat').filter((f) => f.endsWith('.sse')).map((f) => [f, fixture(f).toString()] as const)
    expect(streams.length).toBeGreaterThanOrEqual(5)
    for (const [name, body] of [...streams, ['running usage', running] as const]) {
      const events = eventsOf(body)
      for (let n = 1; n <= events.length; n++) {
        const cut = events.slice(0, n)
        expect(meter('chat.completions', cut), `${name}, first ${n} of ${events.length} events`).toEqual(everyChunk(cut))
      }
    }
  })

  it('parses the first chunk and the one with the usage of a stream that asked for usage', () => {
    const events = eventsOf(fixture('openai-chat/chat-stream-with-usage.sse'))
    expect(events.length).toBeGreaterThan(6)
    const parse = vi.spyOn(JSON, 'parse')
    const r = meter('chat.completions', events)
    expect(r.usage).not.toBeNull()
    expect(r.outputText).toBeUndefined()
    expect(parse).toHaveBeenCalledTimes(2)
  })

  it('keeps the text of a stream without usage, in order, past the bound on what it holds unread', () => {
    const m = new OpenAIMeter({ endpoint: 'chat.completions' })
    const parts: string[] = []
    for (let i = 0; i < 20_000; i++) {
      const t = `w${i} “é” `
      parts.push(t)
      m.event('message', JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', model: 'gpt-4o', choices: [{ index: 0, delta: { content: t }, finish_reason: null }], usage: null }))
    }
    expect((m as unknown as { text: { deltaChars: number } }).text.deltaChars).toBeLessThanOrEqual(1_000_000)
    expect(m.result()).toMatchObject({ usage: null, model: 'gpt-4o', responseId: 'chatcmpl-1', outputText: parts.join('') })
  })

  it('a stream longer than the text kept for its estimate says by how much to scale it, with or without a running count', () => {
    const old = OutputText.MAX_CHARS
    OutputText.MAX_CHARS = 1000
    try {
      const chunk = (usage: object | null) => JSON.stringify({ id: 'cmpl-1', model: 'llama', choices: [{ index: 0, delta: { content: 'z'.repeat(500) } }], usage })
      const none = new OpenAIMeter({ endpoint: 'chat.completions' })
      for (let i = 0; i < 8; i++) none.event('message', chunk(null))
      expect(none.result()).toMatchObject({ usage: null, outputText: 'z'.repeat(1000), outputScale: 4000 / 1000 })
      // Cut before its finish_reason: the running count is a floor, the output estimated from all that streamed.
      const running = new OpenAIMeter({ endpoint: 'chat.completions' })
      for (let i = 0; i < 8; i++) running.event('message', chunk({ prompt_tokens: 7, completion_tokens: i + 1, total_tokens: i + 8 }))
      expect(running.result()).toMatchObject({ partialOutput: true, outputText: 'z'.repeat(1000), outputScale: 4000 / 1000 })
    } finally {
      OutputText.MAX_CHARS = old
    }
  })

  it('tells a usage object from usage: null, however spaced, and from the word inside a string', () => {
    expect(mayCarryUsage('{"choices":[],"usage":null}')).toBe(false)
    expect(mayCarryUsage('{"choices":[],"usage" :\n null}')).toBe(false)
    expect(mayCarryUsage('{"choices":[{"delta":{"content":"the \\"usage\\": {} field"}}],"usage":null}')).toBe(false)
    expect(mayCarryUsage('{"choices":[],"usage":{"prompt_tokens":1}}')).toBe(true)
    expect(mayCarryUsage('{"choices":[],"usage": {"prompt_tokens":1}}')).toBe(true)
    expect(mayCarryUsage('{"usage":null,"x_groq":{"usage":{"prompt_tokens":1}}}')).toBe(true)
    expect(mayCarryUsage('{"choices":[]}')).toBe(false)
    expect(mayCarryUsage('{"usage"')).toBe(true)
    // JSON may spell a key's letters as escapes: any \u says "maybe".
    expect(mayCarryUsage('{"choices":[],"\\u0075sage":{"prompt_tokens":1}}')).toBe(true)
    expect(JSON.parse('{"\\u0075sage":1}')).toEqual({ usage: 1 })
  })
})
