import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { eventually, request } from '../support/http'
import { ledgerRows } from '../support/ledger-rows'
import { type TestServer, startTestServer } from '../support/server'
import { type WsUpstream, startWsUpstream } from '../support/ws-upstream'

/**
 * `burnrate_refusals_total` counts the calls Burnrate refused before they went upstream. On
 * Codex's Responses WebSocket, the provider's own refusal of a turn (its usage limit reached: an
 * `error` frame with status 429 before any of the response) is recorded with status 429 and
 * error `upstream_error`; it was counted there as a refusal of Burnrate's, under the key's budget
 * rule, while the same refusal over HTTP (error null) is not.
 */

let up: WsUpstream
let t: TestServer

const LIMITED = JSON.stringify({ type: 'error', status: 429, error: { type: 'usage_limit_reached', message: 'The usage limit has been reached' } })

beforeAll(async () => {
  up = await startWsUpstream({
    onConnection: (ws) => {
      ws.on('message', (data) => {
        if (JSON.parse(String(data)).type === 'response.create') ws.send(LIMITED)
      })
    },
  })
  t = await startTestServer(
    { metrics: { enabled: true }, budgets: { rules: [{ api_key_pattern: 'sk-blocked-*', daily_limit_usd: 0, action: 'block' }, { api_key_pattern: 'sk-test-*', daily_limit_usd: 100, action: 'block' }] } },
    up.url,
  )
})
afterAll(async () => {
  await t?.cleanup()
  await up?.close()
})

function open(key: string): Promise<{ ws: WebSocket; frames: string[] }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${t.url.replace('http', 'ws')}/v1/responses`, {
      headers: { authorization: `Bearer ${key}`, 'user-agent': 'codex_exec/0.169.0', originator: 'codex_exec', 'openai-beta': 'responses_websockets=2026-02-06' },
    })
    const frames: string[] = []
    ws.on('message', (d) => frames.push(String(d)))
    ws.on('open', () => resolve({ ws, frames }))
    ws.on('error', reject)
  })
}

const create = JSON.stringify({ type: 'response.create', model: 'gpt-4o-mini', input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hi' }] }] })

describe("a provider's 429 on the Responses WebSocket", () => {
  it('is a call with status 429, not a refusal of Burnrate: only the budget refusal is in burnrate_refusals_total', async () => {
    for (const key of ['sk-test-ws-refusals-0001', 'sk-blocked-ws-refusals-0002']) {
      const c = await open(key)
      c.ws.send(create)
      await eventually(() => c.frames.length === 1, 10_000)
      c.ws.close()
    }
    await eventually(() => ledgerRows(t.dbFile).length === 2, 10_000)
    const rows = ledgerRows(t.dbFile) as { status: number; error: string | null }[]
    expect(rows.map((r) => [r.status, r.error]).sort()).toEqual([[429, 'budget_exceeded'], [429, 'upstream_error']])

    const text = (await request(`${t.url}/metrics`)).text
    const lines = (name: string) => text.split('\n').filter((l) => l.startsWith(`${name}{`))
    expect(lines('burnrate_calls_total').filter((l) => l.includes('status="429"')).reduce((s, l) => s + Number(l.split(' ').at(-1)), 0)).toBe(2)
    expect(lines('burnrate_refusals_total')).toEqual(['burnrate_refusals_total{reason="budget_exceeded",rule="sk-blocked-*"} 1'])
  })
})
