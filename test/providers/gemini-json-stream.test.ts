import { describe, expect, it } from 'vitest'
import { completeElements } from '../../src/main/metering/body-tap'
import { fixture } from '../support/fixtures'
import { eventually, request } from '../support/http'
import { ledgerRows } from '../support/ledger-rows'
import { serverOverMockUpstream } from '../support/server'

/**
 * Gemini's `streamGenerateContent` without `alt=sse` streams a JSON array of the answers an
 * `alt=sse` stream sends as events, each with the running usage. Cut before its end (the upstream
 * resets, the agent is stopped), the call keeps what its whole elements reported: the prompt
 * exactly, the output as a floor, `estimated: true`. Before, a cut array did not parse, so the
 * call was estimated from its request alone, with no output at all.
 */

const s = serverOverMockUpstream()
const PATH = '/gemini/v1beta/models/gemini-2.5-flash:streamGenerateContent'

/** The three answers of the recorded `alt=sse` stream, laid out as Google's JSON array (`[{…}\n,\r\n{…}\n,\r\n{…}]`), an element a chunk. */
function geminiArray(): Buffer[] {
  const events = fixture('gemini/stream-generate-content.sse')
    .toString('utf8')
    .split('\r\n\r\n')
    .filter((e) => e.trim())
    .map((e) => e.replace(/^data: /, ''))
  return events.map((e, i) => Buffer.from((i === 0 ? '[' : ',\r\n') + e + (i === events.length - 1 ? ']' : '\n')))
}

async function call(): Promise<any> {
  const before = ledgerRows(s.t.dbFile).length
  await request(`${s.t.url}${PATH}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-goog-api-key': 'AIzaSy-test-json-stream-0001' },
    body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }),
  }).catch(() => undefined)
  return eventually(() => {
    const r = ledgerRows(s.t.dbFile)
    return r.length > before ? r[r.length - 1] : undefined
  })
}

describe('Gemini streamGenerateContent without alt=sse (a streamed JSON array)', () => {
  it('whole: the last element counts, exactly', async () => {
    s.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'application/json; charset=UTF-8' }, chunks: geminiArray(), delayMs: 5 }))
    const row = await call()
    expect([row.status, row.input_tokens, row.output_tokens, row.reasoning_tokens, row.estimated]).toEqual([200, 18, 115, 35, 0])
  })

  it('cut by the upstream after 2 of 3 elements: the second one\'s counts, the output a floor, estimated', async () => {
    // (the mock resets right after its last write: a blank chunk after the second element lets that one leave first)
    const cut = [...geminiArray().slice(0, 2), Buffer.from('\n')]
    s.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'application/json; charset=UTF-8' }, chunks: cut, delayMs: 30, resetAfterChunks: 3 }))
    const row = await call()
    // the second answer said promptTokenCount 18, candidatesTokenCount 79, thoughtsTokenCount 35
    expect(row.estimated).toBe(1)
    expect(row.input_tokens).toBe(18)
    expect(row.output_tokens).toBeGreaterThanOrEqual(79 + 35)
    expect(row.reasoning_tokens).toBe(35)
    expect(row.cost_usd).toBeGreaterThan(0)
  })
})

describe('completeElements', () => {
  it('gives the whole elements of a cut array, whatever their strings hold', () => {
    expect(completeElements('[{"a":1}\n,\r\n{"b":"x\\"}]{"}\n,\r\n{"c":[1,2')).toEqual([{ a: 1 }, { b: 'x"}]{' }])
    expect(completeElements('  [{"a":"\\\\"},{"b":2}')).toEqual([{ a: '\\' }, { b: 2 }])
    expect(completeElements('[{"a":1}')).toEqual([{ a: 1 }])
  })

  it('gives nothing for no array, no whole element, or an array that ended', () => {
    expect(completeElements('{"a":1}')).toBeUndefined()
    expect(completeElements('[{"a":')).toBeUndefined()
    expect(completeElements('[')).toBeUndefined()
    expect(completeElements('[{"a":1}] trailing')).toBeUndefined()
  })
})
