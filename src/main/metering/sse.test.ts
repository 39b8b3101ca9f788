import { describe, expect, it } from 'vitest'
import { fixture } from '../../../test/support/fixtures'
import { SseParser } from './sse'

function parseAll(chunks: Buffer[]): [string, string][] {
  const out: [string, string][] = []
  const p = new SseParser((e, d) => out.push([e, d]))
  for (const c of chunks) p.write(c)
  p.end()
  return out
}

describe('SseParser', () => {
  it('parses events, multi-line data, comments and the three line endings', () => {
    const text = ': comment\r\nevent: a\r\ndata: 1\r\ndata: 2\r\n\r\ndata: x\n\nevent: b\rdata: y\r\rdata:no-space\n\n'
    expect(parseAll([Buffer.from(text)])).toEqual([
      ['a', '1\n2'],
      ['message', 'x'],
      ['b', 'y'],
      ['message', 'no-space'],
    ])
  })

  it('gives the same events however the bytes are split, even inside CRLF and UTF-8 characters', () => {
    for (const file of ['gemini/stream-generate-content.sse', 'anthropic/messages-stream-text.sse', 'openai-responses/responses-stream-basic.sse']) {
      const body = Buffer.concat([fixture(file), Buffer.from('data: {"t":"héllo – ✓"}\r\n\r\n')])
      const whole = parseAll([body])
      expect(whole.length).toBeGreaterThan(2)
      for (let cut = 1; cut < body.length; cut += 7) {
        expect(parseAll([body.subarray(0, cut), body.subarray(cut)])).toEqual(whole)
      }
      const bytes = [...body].map((b) => Buffer.from([b]))
      expect(parseAll(bytes)).toEqual(whole)
    }
  })

  it('dispatches a last event that lacks its blank line at end of stream', () => {
    expect(parseAll([Buffer.from('data: last')])).toEqual([['message', 'last']])
  })
})

describe('SseParser on hostile input', () => {
  it('drops a line longer than MAX_LINE, however it is chunked, and parses what follows', () => {
    const old = SseParser.MAX_LINE
    SseParser.MAX_LINE = 1000
    try {
      const long = Buffer.alloc(5000, 0x61)
      const chunks = [Buffer.from('data: '), ...Array.from({ length: 50 }, (_, i) => long.subarray(i * 100, i * 100 + 100)), Buffer.from('\n\ndata: ok\n\n')]
      expect(parseAll(chunks)).toEqual([['message', 'ok']])
      expect(parseAll([Buffer.concat(chunks)])).toEqual([['message', 'ok']])
    } finally {
      SseParser.MAX_LINE = old
    }
  })
})
