import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { gzipSync } from 'node:zlib'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from '../support/server'
import { ADMIN_CONFIG, admin } from './support'

/**
 * The admin API's JSON bodies (contract: Admin API; README: a clear error in the contract's shape
 * for every bad body): a body that does not decompress, and JSON that parses but is no object.
 */
let t: TestServer
// Agent setup edits files in a home folder: a temporary one, never the real one, should a connect go through.
const home = mkdtempSync(join(tmpdir(), 'burnrate-json-body-home-'))
beforeAll(async () => {
  t = await startTestServer(ADMIN_CONFIG, undefined, undefined, { create: { agentHome: { home, env: {}, platform: process.platform } } })
})
afterAll(async () => {
  await t.cleanup()
  rmSync(home, { recursive: true, force: true })
})

const RULE = JSON.stringify({ api_key_pattern: 'sk-gz-*', daily_limit_usd: 1, action: 'block' })
const PRICE = JSON.stringify({ input_mtok: 1, output_mtok: 2 })

describe('admin JSON bodies', () => {
  it('a body that does not decompress is a 400 saying so, not zlib\'s words alone', async () => {
    for (const [method, path, body] of [['POST', '/budgets/rules', RULE], ['PUT', '/prices/openai/gz-model', PRICE]] as const) {
      const torn = await admin(t.url, method, path, {
        raw: gzipSync(body).subarray(0, 10),
        headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      })
      expect(torn.status).toBe(400)
      expect(torn.headers['content-type']).toMatch(/^application\/json/)
      expect(torn.json().error).toEqual({
        type: 'invalid_request',
        message: 'The request body could not be decompressed (Content-Encoding: gzip): unexpected end of file; send it whole, or uncompressed.',
      })
      const plain = await admin(t.url, method, path, { raw: body, headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' } })
      expect(plain.status).toBe(400)
      expect(plain.json().error.message).toMatch(/^The request body could not be decompressed \(Content-Encoding: gzip\): /)
      // A whole one is read as any other body.
      const whole = await admin(t.url, method, path, { raw: gzipSync(body), headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' } })
      expect(whole.status).toBeLessThan(300)
    }
  })

  it('a body that is empty however it is sent (chunked with no data, compressed nothing) is the 400 of an empty body, as with Content-Length: 0', async () => {
    const sends: [string, Record<string, string>, Buffer | undefined][] = [
      ['chunked', { 'transfer-encoding': 'chunked' }, undefined],
      ['gzip of nothing', { 'content-encoding': 'gzip' }, gzipSync('')],
    ]
    for (const [method, path] of [['POST', '/budgets/rules'], ['PUT', '/prices/openai/empty-model'], ['POST', '/agents/claude-code/connect']] as const) {
      for (const [how, headers, raw] of sends) {
        const r = await admin(t.url, method, path, { raw, headers: { 'content-type': 'application/json', ...headers } })
        expect(r.status, `${method} ${path} ${how}: ${r.text}`).toBe(400)
        expect(r.json().error, `${method} ${path} ${how}`).toEqual({ type: 'invalid_request', message: 'The request body is empty; send a JSON object.' })
      }
    }
  })

  it('JSON that is not an object (null, a number, a string) is a 400 asking for an object, never "not valid JSON"', async () => {
    for (const [method, path] of [['POST', '/budgets/rules'], ['PUT', '/prices/openai/any-model'], ['POST', '/agents/claude-code/connect']] as const) {
      for (const raw of ['null', '5', '"sk-x-*"', 'true']) {
        const r = await admin(t.url, method, path, { raw, headers: { 'content-type': 'application/json' } })
        expect(r.status, `${method} ${path} ${raw}`).toBe(400)
        const e = r.json().error
        expect(e.type).toBe('invalid_request')
        expect(e.message, `${method} ${path} ${raw}`).not.toMatch(/not valid JSON/)
        expect(e.message, `${method} ${path} ${raw}`).toMatch(/must be a JSON object/)
      }
    }
    // Nothing of these was stored.
    expect((await admin(t.url, 'GET', '/budgets/rules')).json().map((r: any) => r.api_key_pattern)).toEqual(['sk-gz-*'])
    expect((await admin(t.url, 'GET', '/prices')).json().prices.some((p: any) => p.model === 'any-model')).toBe(false)
  })
})
