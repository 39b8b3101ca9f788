import { describe, expect, it } from 'vitest'
import { clientResponseHeaders, parseRawHeaders, responseHeaders } from './headers'

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

describe('responseHeaders: the upstream headers and the client headers in one pass', () => {
  const cases: string[][] = [
    ['Content-Type', 'application/json', 'Content-Length', '12', 'X-Request-Id', 'req_1', 'Connection', 'keep-alive', 'Keep-Alive', 'timeout=5'],
    ['Set-Cookie', 'a=1', 'Vary', 'Accept', 'set-cookie', 'b=2', 'vary', 'Origin', 'Content-Type', 'text/plain', 'content-type', 'text/html'],
    ['Connection', 'close, X-Secret', 'X-Secret', 'hop', 'x-kept', 'yes', 'Trailer', 'x-sum', 'Transfer-Encoding', 'chunked', 'Set-Cookie2', 'c'],
    ['X-A', '1', 'Connection', 'x-a', 'x-a', '2', 'Upgrade', 'h2c', 'Proxy-Authenticate', 'Basic', 'Age', '1', 'age', '2'],
    [],
  ]
  it.each(cases.map((c) => [c]))('equals parseRawHeaders then clientResponseHeaders, key order included (%j)', (pairs) => {
    const { upstream, client } = responseHeaders(raw(...pairs))
    const expectedUpstream = parseRawHeaders(raw(...pairs))
    const expectedClient = clientResponseHeaders(expectedUpstream)
    expect(upstream).toEqual(expectedUpstream)
    expect(client.toObject()).toEqual(expectedClient)
    expect(Object.keys(client.toObject())).toEqual(Object.keys(expectedClient))
    // Each name once in the list Node writes as it is.
    expect(client.list.length).toBe(2 * Object.keys(expectedClient).length)
  })
})
