import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { request } from '../support/http'
import { type TestServer, startTestServer } from '../support/server'

// The dashboard page and its assets, served by the real server from a renderer folder on disk.
let dir: string
const INDEX = '<!doctype html><html><head><script type="module" src="/assets/app-1a2b.js"></script></head><body><div id="app"></div></body></html>'

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'burnrate-renderer-'))
  mkdirSync(join(dir, 'assets'))
  writeFileSync(join(dir, 'index.html'), INDEX)
  writeFileSync(join(dir, 'assets', 'app-1a2b.js'), 'console.log("app")')
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

let t: TestServer | null = null
afterEach(async () => {
  await t?.cleanup()
  t = null
  delete process.env.BURNRATE_RENDERER_DIR
})

async function serverWith(config: Record<string, any>, rendererDir: string) {
  process.env.BURNRATE_RENDERER_DIR = rendererDir
  t = await startTestServer(config)
  return t
}

describe('the dashboard page', () => {
  it('is served at / with a strict Content-Security-Policy', async () => {
    const { url } = await serverWith({}, dir)
    const r = await request(`${url}/`)
    expect(r.status).toBe(200)
    expect(r.headers['content-type']).toMatch(/^text\/html/)
    expect(r.text).toBe(INDEX)
    const csp = String(r.headers['content-security-policy'])
    expect(csp).toContain("default-src 'self'")
    expect(csp).toContain("script-src 'self'")
    expect(csp).not.toContain('unsafe-inline')
    expect(csp).not.toContain('unsafe-eval')
    expect(csp).toContain("frame-ancestors 'none'")
    expect(r.headers['x-content-type-options']).toBe('nosniff')
  })

  it('answers page paths with index.html so bookmarked URLs load (query string kept by the app)', async () => {
    const { url } = await serverWith({}, dir)
    for (const path of ['/?range=7d&group=agent&tenant=acme', '/sessions', '/index.html']) {
      const r = await request(url + path, { headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' } })
      expect(r.status, path).toBe(200)
      expect(r.text, path).toBe(INDEX)
    }
  })

  it('serves hashed assets with a long cache and the same headers', async () => {
    const { url } = await serverWith({}, dir)
    const r = await request(`${url}/assets/app-1a2b.js`)
    expect(r.status).toBe(200)
    expect(r.headers['content-type']).toMatch(/javascript/)
    expect(r.headers['cache-control']).toContain('immutable')
    expect(r.headers['content-security-policy']).toBeDefined()
  })

  it('leaves missing files, other methods and /api paths to the contract 404', async () => {
    const { url } = await serverWith({}, dir)
    for (const [method, path] of [
      ['GET', '/assets/missing.js'],
      ['GET', '/favicon.ico'],
      ['GET', '/api/nothing-here'],
      ['POST', '/'],
      // An SDK or script with a mistyped path asks for JSON and must get the contract's 404, not the page.
      ['GET', '/v2/models'],
      ['GET', '/sessions'],
    ]) {
      const r = await request(url + path, { method })
      expect(r.status, `${method} ${path}`).toBe(404)
      expect(r.json().error.type).toBe('not_found')
    }
  })

  it('says to build it, with a 503 JSON, when the renderer folder is missing', async () => {
    const { url } = await serverWith({}, join(dir, 'does-not-exist'))
    const r = await request(`${url}/`)
    expect(r.status).toBe(503)
    expect(r.json().error.type).toBe('service_unavailable')
    expect(r.json().error.message).toMatch(/npm run build/)
    // The rest of the server still works.
    expect((await request(`${url}/api/health`)).status).toBe(200)
  })

  it('is not served when dashboard.enabled is false', async () => {
    const { url } = await serverWith({ dashboard: { enabled: false } }, dir)
    const r = await request(`${url}/`)
    expect(r.status).toBe(404)
    expect(r.json().error.type).toBe('not_found')
    expect((await request(`${url}/assets/app-1a2b.js`)).status).toBe(404)
  })
})
