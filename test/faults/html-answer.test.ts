import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually, postJson } from '../support/http'
import { ledgerRows } from '../support/ledger-rows'
import { type TestServer, startTestServer } from '../support/server'

/**
 * A web page where a model's answer should be: a captive portal's sign-in page, a corporate
 * proxy's block page, or a base_url that names a web site (a gateway's UI, a docs page), all
 * answering 200 text/html. No model ran: the agent gets the page as it came, and the call is
 * recorded at $0, not charged as a model call whose usage went missing.
 */

const PAGE = '<!doctype html><html><body><h1>Sign in to the guest network</h1></body></html>'
const PROMPT = 'Summarise the attached design document. '.repeat(500)

let up: http.Server
let t: TestServer

beforeAll(async () => {
  up = http.createServer((req, res) => {
    req.resume()
    req.on('end', () => res.writeHead(200, { 'content-type': 'text/html; charset=UTF-8' }).end(PAGE))
  })
  await new Promise<void>((r) => up.listen(0, '127.0.0.1', r))
  t = await startTestServer({}, `http://127.0.0.1:${(up.address() as AddressInfo).port}`)
})
afterAll(async () => {
  await t.cleanup()
  await new Promise<void>((r) => up.close(() => r()))
})

describe('a 200 text/html answer to a model call', () => {
  it('is passed on as it came and recorded at $0, not estimated (OpenAI, streamed or not, and Anthropic)', async () => {
    const calls: [string, unknown][] = [
      ['/v1/chat/completions', { model: 'gpt-4o', messages: [{ role: 'user', content: PROMPT }] }],
      ['/v1/chat/completions', { model: 'gpt-4o', stream: true, messages: [{ role: 'user', content: PROMPT }] }],
      ['/v1/messages', { model: 'claude-sonnet-4-20250514', max_tokens: 1024, messages: [{ role: 'user', content: PROMPT }] }],
    ]
    for (const [path, body] of calls) {
      const res = await postJson(`${t.url}${path}`, body)
      expect(res.status).toBe(200)
      expect(res.text).toBe(PAGE)
    }
    const rows = await eventually(() => {
      const r = ledgerRows(t.dbFile)
      return r.length >= calls.length ? r : undefined
    })
    expect(rows).toHaveLength(calls.length)
    for (const row of rows ?? []) {
      expect(row).toMatchObject({ status: 200, cost_usd: 0, input_tokens: 0, output_tokens: 0, estimated: 0, error: 'not_a_model_answer: text/html' })
    }
  })
})
