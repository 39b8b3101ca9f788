import { describe, expect, it } from 'vitest'
import { readCutJson } from './cut-json'
import { OutputText } from './output-text'

const KEYS = new Set(['text', 'content'])

describe('readCutJson', () => {
  it('reads the text values that arrived, the last up to the cut, and the top-level fields', () => {
    const body = '{"id":"msg_1","model":"m-1","content":[{"type":"text","text":"Hello \\"there\\""},{"type":"text","text":"and so on, to the c'
    const r = readCutJson(body, KEYS)
    expect(r.text.join('')).toBe('Hello "there"and so on, to the c')
    expect(r.fields).toEqual({ id: 'msg_1', model: 'm-1' })
    expect(r.usage).toBeUndefined()
  })

  it('a value cut inside an escape loses only that escape', () => {
    expect(readCutJson('{"text":"caf\\u00', KEYS).text.join('')).toBe('caf')
    expect(readCutJson('{"text":"line\\', KEYS).text.join('')).toBe('line')
    expect(readCutJson('{"text":"x\\u00e9y', KEYS).text.join('')).toBe('xéy')
  })

  it('takes a usage object only when it arrived whole, and only at the top level', () => {
    expect(readCutJson('{"usage":{"input_tokens":5,"output_tokens":7},"content":[{"text":"ab', KEYS).usage).toEqual({ input_tokens: 5, output_tokens: 7 })
    expect(readCutJson('{"content":"ab","usage":{"input_tokens":5,"out', KEYS).usage).toBeUndefined()
    expect(readCutJson('{"choices":[{"usage":{"x":1}}],"content":"ab', KEYS).usage).toBeUndefined()
  })

  it('skips keys whose values are not strings, and strings that are not values of a text key', () => {
    const r = readCutJson('{"text":{"format":{"type":"text"}},"tools":[{"description":"not output"}],"content":["a","b"],"x":"text"', KEYS)
    expect(r.text.join('')).toBe('')
  })

  it('keeps no more than a stream would of a huge value: the rest is counted in its scale', () => {
    const r = readCutJson(`{"text":"${'='.repeat(OutputText.MAX_CHARS * 2)}`, KEYS)
    expect(r.text.join('').length).toBe(OutputText.MAX_CHARS)
    expect(r.text.scale).toBeCloseTo(2, 6)
  })

  it('walks a bounded part of a cut body whatever it holds, so a 16 MB one does not block the event loop', () => {
    // Work counted, not timed: the reader's walk reads the body one charCodeAt at a time.
    const original = String.prototype.charCodeAt
    let reads = 0
    String.prototype.charCodeAt = function (this: string, i: number) {
      reads++
      return original.call(this, i)
    }
    const MB = 1024 * 1024
    const bodies = [
      '{' + '['.repeat(16 * MB), // deep nesting
      '{"a":[' + '1,'.repeat(8 * MB), // a numbers array
      '{' + '"a":1,'.repeat(3 * MB), // a million small keys
      '{"a":[' + '"x",'.repeat(4 * MB), // a million small strings
      `{"text":"${'\\'.repeat(8 * MB)}"}`, // a run of escaped backslashes
    ]
    try {
      for (const body of bodies) {
        reads = 0
        readCutJson(body, KEYS)
        expect(reads).toBeLessThan(6 * MB)
      }
    } finally {
      String.prototype.charCodeAt = original
    }
  })

  it('extrapolates the text of a body longer than the part read from the share that part held', () => {
    const MB = 1024 * 1024
    // Half of each piece is output text: the estimate keeps that share of the whole 16 MB.
    const piece = `{"text":"${'a'.repeat(1000)}","x":"${'b'.repeat(1000)}"},`
    const body = '{"content":[' + piece.repeat(Math.ceil((16 * MB) / piece.length))
    const r = readCutJson(body, new Set(['text']))
    const kept = r.text.join('').length
    const whole = kept * (r.text.scale ?? 1)
    expect(whole / body.length).toBeGreaterThan(0.45)
    expect(whole / body.length).toBeLessThan(0.55)
  })

  it('reads the names it is given, at the depth of a wrapped answer, and no strings under ignored keys', () => {
    const shape = { usageKey: 'usageMetadata', fields: new Set(['modelVersion']), ignore: new Set(['groundingMetadata']), depth: 2 }
    const body =
      '{"response":{"modelVersion":"g-1","candidates":[{"content":{"parts":[{"text":"One."}]},"groundingMetadata":{"groundingSupports":[{"segment":{"text":"One."}}]}},{"content":{"parts":[{"text":"Two."}]}}],"usageMetadata":{"promptTokenCount":3,"promptTokensDetails":[{"tokenCount":3}]}},"traceId":"t'
    const r = readCutJson(body, KEYS, shape)
    expect(r.text.join('')).toBe('One.Two.')
    expect(r.fields).toEqual({ modelVersion: 'g-1' })
    expect(r.usage).toEqual({ promptTokenCount: 3, promptTokensDetails: [{ tokenCount: 3 }] })
  })

  it('reads an object under an `objects` key as its JSON text, whole or up to the cut, its strings not again as text', () => {
    const shape = { objects: new Set(['input']) }
    const whole = readCutJson('{"content":[{"type":"tool_use","input":{"text":"a","n":[1,{"x":2}]}},{"type":"text","text":"b"}],"x":"', KEYS, shape)
    expect(whole.text.join('|')).toBe('{"text":"a","n":[1,{"x":2}]}|b')
    const cut = readCutJson('{"content":[{"type":"tool_use","input":{"path":"/a","text":"wri', KEYS, shape)
    expect(cut.text.join('')).toBe('{"path":"/a","text":"wri')
    const huge = readCutJson(`{"input":{"t":"${'='.repeat(OutputText.MAX_CHARS * 2)}`, KEYS, shape)
    expect(huge.text.join('').length).toBe(OutputText.MAX_CHARS)
    expect(huge.text.scale).toBeGreaterThan(1.9)
  })
})
