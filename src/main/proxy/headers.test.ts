import { describe, expect, it } from 'vitest'
import { clientResponseHeaders, parseRawHeaders } from './headers'

const raw = (...pairs: string[]): Buffer[] => pairs.map((p) => Buffer.from(p, 'latin1'))

describe('parseRawHeaders: undici raw response headers as Node would give them', () => {
  it('lower-cases names and keeps values byte for byte (latin1)', () => {
    const h = parseRawHeaders(raw('Content-Type', 'application/json', 'X-Name', 'caf\u00e9'))
    expect(h).toEqual({ 'content-type': 'application/json', 'x-name': 'caf\u00e9' })
  })

  it('keeps every Set-Cookie as a list, joins other repeats, keeps the first of a single-valued header', () => {
    const h = parseRawHeaders(
      raw('Set-Cookie', 'a=1', 'Vary', 'Accept', 'set-cookie', 'b=2', 'vary', 'Origin', 'Content-Type', 'text/plain', 'content-type', 'text/html'),
    )
    expect(h['set-cookie']).toEqual(['a=1', 'b=2'])
    expect(h.vary).toBe('Accept, Origin')
    expect(h['content-type']).toBe('text/plain')
  })

  it('feeds clientResponseHeaders, which still drops hop-by-hop headers', () => {
    const h = clientResponseHeaders(parseRawHeaders(raw('Connection', 'keep-alive', 'Transfer-Encoding', 'chunked', 'Content-Encoding', 'gzip')))
    expect(h).toEqual({ 'content-encoding': 'gzip' })
  })
})
