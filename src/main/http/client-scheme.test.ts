import type { IncomingMessage } from 'node:http'
import { describe, expect, it } from 'vitest'
import { clientScheme } from './client-scheme'

const req = (headers: Record<string, string | string[]>, encrypted = false) => ({ headers, socket: { encrypted } }) as unknown as IncomingMessage

describe('the scheme the client used (for addresses told back to it)', () => {
  it("is the socket's without a proxy's word", () => {
    expect(clientScheme(req({}))).toBe('http')
    expect(clientScheme(req({}, true))).toBe('https')
  })

  it("is X-Forwarded-Proto's first value, in any case", () => {
    expect(clientScheme(req({ 'x-forwarded-proto': 'https' }))).toBe('https')
    expect(clientScheme(req({ 'x-forwarded-proto': 'HTTPS, http' }))).toBe('https')
    expect(clientScheme(req({ 'x-forwarded-proto': ' http ,https' }, true))).toBe('http')
    expect(clientScheme(req({ 'x-forwarded-proto': ['https', 'http'] }))).toBe('https')
  })

  it("is the first Forwarded element's proto, quoted or not", () => {
    expect(clientScheme(req({ forwarded: 'for=192.0.2.60;proto=https;by=203.0.113.43' }))).toBe('https')
    expect(clientScheme(req({ forwarded: 'for="[2001:db8:cafe::17]:4711"; Proto="https", for=10.0.0.1;proto=http' }))).toBe('https')
    expect(clientScheme(req({ forwarded: 'for="a,b";proto=https' }))).toBe('https')
    // The first element (the client's hop) names no proto: a later hop's is not the client's.
    expect(clientScheme(req({ forwarded: 'for=192.0.2.60, for=10.0.0.1;proto=https' }))).toBe('http')
  })

  it('takes only http or https; anything else leaves the next word, then the socket', () => {
    expect(clientScheme(req({ 'x-forwarded-proto': 'javascript' }))).toBe('http')
    expect(clientScheme(req({ 'x-forwarded-proto': 'wss', forwarded: 'proto=https' }))).toBe('https')
    expect(clientScheme(req({ 'x-forwarded-proto': '', forwarded: 'proto=ftp' }, true))).toBe('https')
    expect(clientScheme(req({ 'x-forwarded-proto': 'https', forwarded: 'proto=http' }))).toBe('https')
  })
})
