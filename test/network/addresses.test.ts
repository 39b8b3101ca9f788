import http from 'node:http'
import { describe, expect, it } from 'vitest'
import { answeringHost } from '../../src/main/security/hosts'
import { startLoggedServer } from './support'

/** `localhost` means 127.0.0.1 to some clients and ::1 to others; advice names an address that answers. */

function get(url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { headers, agent: false }, (res) => {
      let text = ''
      res.on('data', (c) => (text += c))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : null }))
    })
    req.on('error', reject)
  })
}

describe('listen addresses', () => {
  it('server.host: localhost answers on 127.0.0.1 and on ::1, on one port, and stops on both', async () => {
    const s = await startLoggedServer({ server: { host: 'localhost' } })
    const port = new URL(s.url).port
    try {
      expect((await get(`http://127.0.0.1:${port}/api/health`)).status).toBe(200)
      expect((await get(`http://[::1]:${port}/api/health`)).status).toBe(200)
      expect((await get(`http://[::1]:${port}/api/health`, { host: `localhost:${port}` })).status).toBe(200)
    } finally {
      await s.stop()
    }
    await expect(get(`http://[::1]:${port}/api/health`)).rejects.toThrow(/ECONNREFUSED/)
    await expect(get(`http://127.0.0.1:${port}/api/health`)).rejects.toThrow(/ECONNREFUSED/)
  })

  it('bound to ::1, a refused Host is told to use http://[::1]:PORT, which answers (not 127.0.0.1)', async () => {
    const s = await startLoggedServer({ server: { host: '::1' } })
    const port = new URL(s.url).port
    try {
      const res = await get(`http://[::1]:${port}/api/health`, { host: 'evil.example' })
      expect(res.status).toBe(403)
      expect(res.body.error.message).toContain(`use http://[::1]:${port}`)
      expect(res.body.error.message).not.toContain('127.0.0.1')
      expect((await get(`http://[::1]:${port}/api/health`)).status).toBe(200)
    } finally {
      await s.stop()
    }
  })

  it('advises the address that answers for each kind of listen address', () => {
    expect(answeringHost('localhost')).toBe('127.0.0.1')
    expect(answeringHost('127.0.0.1')).toBe('127.0.0.1')
    expect(answeringHost('0.0.0.0')).toBe('127.0.0.1')
    expect(answeringHost('::1')).toBe('[::1]')
    expect(answeringHost('[::1]')).toBe('[::1]')
    expect(answeringHost('::')).toBe('[::1]')
    expect(answeringHost('192.168.1.20')).toBe('192.168.1.20')
    expect(answeringHost('fd00::5')).toBe('[fd00::5]')
  })
})
