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

  it('joins any number of data lines, empty ones included, and dispatches an event whose only data is empty', () => {
    const text = 'data: 1\ndata:\ndata: 3\ndata: 4\n\nevent: e\ndata\n\ndata: after\n\n'
    expect(parseAll([Buffer.from(text)])).toEqual([
      ['message', '1\n\n3\n4'],
      ['e', ''],
      ['message', 'after'],
    ])
  })

  it('names each event exactly, however often a name repeats, one name starts another, or a stream uses many', () => {
    const names = ['content_block_delta', 'content_block', 'content_block_delta_x', '', 'ping', 'content_block_delta', 'é', 'e'.repeat(100), 'e'.repeat(100)]
    for (let i = 0; i < 20; i++) names.push(`kind_${i}`, 'content_block')
    const text = names.map((n) => `event:${n ? ' ' + n : ''}\ndata: x\n\n`).join('')
    expect(parseAll([Buffer.from(text)]).map(([e]) => e)).toEqual(names.map((n) => n || 'message'))
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

  it('reads a field only by its whole name: other fields, and names that start like data or event, are not data', () => {
    const text = 'id: 7\nretry: 10\ndatabase: no\ndata2: no\nevents: no\nevent\ndata\n\ndata:  two spaces\nevent:e\nid\n\n'
    expect(parseAll([Buffer.from(text)])).toEqual([
      ['message', ''],
      ['e', ' two spaces'],
    ])
  })

  it('ignores one leading byte order mark, as the standard says, however the bytes are split', () => {
    const bom = Buffer.from([0xef, 0xbb, 0xbf])
    const body = Buffer.from('event: message_start\ndata: {"a":1}\n\n')
    expect(parseAll([Buffer.concat([bom, body])])).toEqual([['message_start', '{"a":1}']])
    // split inside the mark; a first data line after it is data
    expect(parseAll([bom.subarray(0, 1), bom.subarray(1), Buffer.from('data: x\n\n')])).toEqual([['message', 'x']])
    // only the first one: a second mark starts an unknown field name
    expect(parseAll([bom, bom, Buffer.from('data: y\n\ndata: z\n\n')])).toEqual([['message', 'z']])
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

  it('keeps a line just under MAX_LINE that arrives in many small chunks, whole, and stays linear in its length', () => {
    // 4 KB chunks of a 15 MiB line: joining the line per chunk (and so copying it to search it)
    // took minutes; kept as pieces it is joined once. The test's own time limit is the check.
    const size = 15 * 1024 * 1024
    const line = Buffer.alloc(size, 0x62)
    const chunks = [Buffer.from('event: big\r\ndata: ')]
    for (let i = 0; i < size; i += 4096) chunks.push(line.subarray(i, i + 4096))
    chunks.push(Buffer.from('\r'), Buffer.from('\n\r\ndata: next\n\n'))
    const out = parseAll(chunks)
    expect(out.map(([e, d]) => [e, d.length])).toEqual([
      ['big', size],
      ['message', 4],
    ])
    expect(out[0][1]).toBe('b'.repeat(size))
  }, 30_000)
})
