import { describe, expect, it } from 'vitest'
import { HostPolicy, isLoopbackHost, splitHostPort } from './hosts'
import { bearerCredential, bearerToken, cookieValue, safeEqual } from './secrets'

describe('host policy', () => {
  const loop = new HostPolicy({ configuredHost: '127.0.0.1', allowedHosts: [], allowedOrigins: [] })

  it('accepts the configured address, localhost and loopback IPs on the server port', () => {
    for (const h of ['127.0.0.1:8787', 'localhost:8787', 'LOCALHOST:8787', '127.1.2.3:8787', '[::1]:8787']) {
      expect(loop.allowsHost(h, 8787), h).toBe(true)
    }
  })

  it('refuses other names, other ports, and malformed values (DNS rebinding)', () => {
    for (const h of [
      'evil.example:8787', 'evil.example', 'localhost.:8787', 'localhost.evil.example:8787', '127.0.0.1.nip.io:8787',
      '127.0.0.1:8788', 'localhost', '10.0.0.5:8787', '[::2]:8787', '', 'a b:8787', '127.0.0.1:99999', '[::1', 'x:8787:1',
      '256.0.0.1:8787', '127.0.0.1:8787/', 'user@127.0.0.1:8787',
    ]) {
      expect(loop.allowsHost(h, 8787), h).toBe(false)
    }
    expect(loop.allowsHost(undefined, 8787)).toBe(false)
  })

  it('takes port 80 as the default port', () => {
    expect(loop.allowsHost('localhost', 80)).toBe(true)
    expect(loop.allowsHost('localhost:80', 80)).toBe(true)
  })

  it('adds the interface addresses for a wildcard bind, and the names the user lists', () => {
    const wild = new HostPolicy({
      configuredHost: '0.0.0.0',
      allowedHosts: ['burnrate.lan', 'host.docker.internal:9000'],
      allowedOrigins: ['http://localhost:5173'],
      interfaceAddresses: ['192.168.1.5', 'fe80::1'],
    })
    expect(wild.allowsHost('192.168.1.5:8787', 8787)).toBe(true)
    expect(wild.allowsHost('0.0.0.0:8787', 8787)).toBe(true)
    expect(wild.allowsHost('[fe80::1]:8787', 8787)).toBe(true)
    expect(wild.allowsHost('192.168.1.6:8787', 8787)).toBe(false)
    expect(wild.allowsHost('burnrate.lan:1234', 8787)).toBe(true)
    expect(wild.allowsHost('host.docker.internal:9000', 8787)).toBe(true)
    expect(wild.allowsHost('host.docker.internal:9001', 8787)).toBe(false)
    expect(wild.allowsOrigin('http://localhost:5173', 8787)).toBe(true)
    expect(wild.allowsOrigin('http://localhost:5174', 8787)).toBe(false)
  })

  it('accepts only this server as an Origin', () => {
    expect(loop.allowsOrigin('http://127.0.0.1:8787', 8787)).toBe(true)
    expect(loop.allowsOrigin('http://localhost:8787', 8787)).toBe(true)
    for (const o of ['null', 'https://127.0.0.1:8787', 'http://evil.example', 'http://localhost:3000', 'file://', 'http://127.0.0.1:8787.evil.example']) {
      expect(loop.allowsOrigin(o, 8787), o).toBe(false)
    }
  })

  it('knows loopback names', () => {
    expect(isLoopbackHost('127.0.0.1')).toBe(true)
    expect(isLoopbackHost('[::1]')).toBe(true)
    expect(isLoopbackHost('0.0.0.0')).toBe(false)
    expect(isLoopbackHost('192.168.0.1')).toBe(false)
    expect(splitHostPort('[::1]:80')).toEqual({ host: '::1', port: 80 })
  })
})

describe('secrets', () => {
  it('compares tokens exactly', () => {
    expect(safeEqual('abc', 'abc')).toBe(true)
    expect(safeEqual('abc', 'abd')).toBe(false)
    expect(safeEqual('abc', 'abcd')).toBe(false)
    expect(safeEqual('', 'x')).toBe(false)
  })

  it('reads bearer tokens and cookies', () => {
    expect(bearerToken('Bearer t0k')).toBe('t0k')
    expect(bearerToken('bearer   t0k ')).toBe('t0k')
    expect(bearerToken('Basic t0k')).toBeNull()
    expect(bearerToken('Bearer a b')).toBeNull()
    expect(bearerToken(undefined)).toBeNull()
    expect(cookieValue('a=1; burnrate_dashboard=xyz; b=2', 'burnrate_dashboard')).toBe('xyz')
    expect(cookieValue('a=1', 'burnrate_dashboard')).toBeNull()
  })

  it('reads a bearer credential as clients send it, whitespace and case as they come', () => {
    expect(bearerCredential('Bearer sk-1')).toBe('sk-1')
    expect(bearerCredential(' \tBEARER\t sk 1 \u00a0')).toBe('sk 1')
    expect(bearerCredential('bearer\u00a0sk-1')).toBe('sk-1')
    expect(bearerCredential('Bearersk-1')).toBeNull()
    expect(bearerCredential('Bearer    ')).toBeNull()
    expect(bearerCredential('Basic sk-1')).toBeNull()
    expect(bearerCredential(`Bearer a${' '.repeat(20_000)}b`)).toBe(`a${' '.repeat(20_000)}b`)
  })
})
