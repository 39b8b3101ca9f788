import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { request } from '../support/http'
import { startTestServer, type TestServer } from '../support/server'

/**
 * The body-parser errors the admin API and ingest did not word themselves went on to the catch-all:
 * a charset other than UTF-8 and a Content-Encoding body-parser cannot undo were both "The request
 * body has an unsupported encoding." on ingest (no `param`, nothing naming what was sent or what to
 * send), and on the admin API "Send the body as UTF-8 JSON without a content encoding." for either,
 * though it takes gzip; a path whose %-escape is not UTF-8 came back in express's own words ("Failed
 * to decode param '%E0%A4'"). Each is now in the contract's shape, naming what was wrong and what to send.
 */
const ADMIN = 'admin-token-body-errors-0123456789'
const ALICE = 'team-token-alice-body-errors-9d2e4b'
let t: TestServer
beforeAll(async () => {
  t = await startTestServer({ timezone: 'UTC', admin: { enabled: true, token: ADMIN }, team: { members: [{ name: 'alice', token: ALICE }] } })
})
afterAll(async () => {
  await t.cleanup()
})

const A = { authorization: `Bearer ${ADMIN}` }
const I = { authorization: `Bearer ${ALICE}` }
const RULE = JSON.stringify({ api_key_pattern: 'sk-body-*', daily_limit_usd: 1, action: 'block' })
const ROUTES = [
  ['POST', '/api/ingest', I, '{"calls":[]}', { param: 'calls' }],
  ['POST', '/api/admin/budgets/rules', A, RULE, {}],
  ['PUT', '/api/admin/prices/openai/body-model', A, '{"input_mtok":1,"output_mtok":2}', {}],
] as const

describe('body-parser errors, in the contract\'s shape and clear words', () => {
  it('a charset other than UTF-8 is a 415 naming it and asking for UTF-8', async () => {
    for (const [method, path, auth, body, extra] of ROUTES) {
      const r = await request(t.url + path, { method, headers: { ...auth, 'content-type': 'application/json; charset=utf-x' }, body })
      expect(r.status, `${path} ${r.text}`).toBe(415)
      expect(r.headers['content-type']).toMatch(/^application\/json/)
      expect(r.json().error).toEqual({
        type: 'unsupported_media_type',
        message: 'The request body\'s charset "utf-x" is not supported; send the JSON in UTF-8 (Content-Type: application/json).',
        ...extra,
      })
    }
  })

  it('a Content-Encoding body-parser cannot undo is a 415 naming it and the ones it can', async () => {
    for (const encoding of ['compress', 'gzip, identity']) {
      for (const [method, path, auth, body, extra] of ROUTES) {
        const r = await request(t.url + path, { method, headers: { ...auth, 'content-type': 'application/json', 'content-encoding': encoding }, body })
        expect(r.status, `${path} ${r.text}`).toBe(415)
        expect(r.json().error).toEqual({
          type: 'unsupported_media_type',
          message: `The request body's Content-Encoding "${encoding}" is not supported; send it uncompressed, or compressed with one of gzip, deflate, br, zstd.`,
          ...extra,
        })
      }
    }
  })

  it('a path whose %-escape is not UTF-8 is a 400 saying so, not express\'s words', async () => {
    for (const method of ['PUT', 'DELETE']) {
      const body = method === 'PUT' ? '{"input_mtok":1,"output_mtok":2}' : undefined
      const r = await request(`${t.url}/api/admin/prices/openai/gpt%E0%A4`, { method, headers: { ...A, 'content-type': 'application/json' }, body })
      expect(r.status, r.text).toBe(400)
      expect(r.json().error).toEqual({
        type: 'invalid_request',
        message: 'The path /api/admin/prices/openai/gpt%E0%A4 holds a %-escape that is not UTF-8 text ("gpt%E0%A4"); escape each byte of the name\'s UTF-8.',
      })
    }
    // The server answers on; nothing was stored.
    expect((await request(`${t.url}/api/admin/prices`, { headers: A })).json().prices).toEqual([])
  })
})
