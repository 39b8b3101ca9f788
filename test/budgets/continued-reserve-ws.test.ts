import { calcPrice } from '@pydantic/genai-prices'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { eventually } from '../support/http'
import { type TestServer, startTestServer } from '../support/server'
import { type WsUpstream, startWsUpstream } from '../support/ws-upstream'
import { callsOf, spentToday } from './support'

/**
 * Codex on its Responses WebSocket sends each later turn as what is new since the last response
 * (`previous_response_id`) and is billed for the whole conversation. Several Codex sessions (or
 * sub-agents) on one key, each turn reserved for its few bytes, took a $1 block rule to $1.37. A
 * turn continuing a response Burnrate saw answered reserves that conversation: the rule holds.
 */
const LIMIT = 1
const INPUT = 200_000
const CACHED = 150_000
const OUTPUT = 1_000
const TURN_COST = calcPrice({ input_tokens: INPUT, cache_read_tokens: CACHED, output_tokens: OUTPUT }, 'gpt-5-2025-08-07', { providerId: 'openai' })!.total_price
const BURST = 12
const KEY = 'sk-codex-conv-aaaaaaaaaaaa-0001'

let up: WsUpstream
let t: TestServer
let answered = 0
/** The turns the upstream received; while `holding`, their answers wait in `held`. */
let received = 0
let holding = false
const held: (() => void)[] = []

function answer(ws: WebSocket): void {
  const resp = { id: `resp_ws${++answered}`, object: 'response', model: 'gpt-5-2025-08-07', status: 'in_progress' }
  const usage = { input_tokens: INPUT, input_tokens_details: { cached_tokens: CACHED }, output_tokens: OUTPUT, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: INPUT + OUTPUT }
  ws.send(JSON.stringify({ type: 'response.created', sequence_number: 0, response: resp }))
  ws.send(JSON.stringify({ type: 'response.completed', sequence_number: 1, response: { ...resp, status: 'completed', usage } }))
}

beforeAll(async () => {
  up = await startWsUpstream({
    onConnection: (ws) => {
      ws.on('message', (data, binary) => {
        if (binary || JSON.parse(String(data)).type !== 'response.create') return
        received++
        if (holding) held.push(() => answer(ws))
        else answer(ws)
      })
    },
  })
  t = await startTestServer({ timezone: 'UTC', budgets: { rules: [{ api_key_pattern: 'sk-codex-conv-*', daily_limit_usd: LIMIT, action: 'block' }] } }, up.url)
})
afterAll(async () => {
  await t.cleanup()
  await up.close()
})

function open(): Promise<{ ws: WebSocket; frames: any[] }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${t.url.replace('http', 'ws')}/v1/responses`, {
      headers: { authorization: `Bearer ${KEY}`, 'user-agent': 'codex_exec/0.169.0', 'openai-beta': 'responses_websockets=2026-02-06' },
    })
    const frames: any[] = []
    ws.on('message', (d) => frames.push(JSON.parse(String(d))))
    ws.on('open', () => resolve({ ws, frames }))
    ws.on('error', reject)
  })
}

const create = (previous?: string) =>
  JSON.stringify({ type: 'response.create', model: 'gpt-5', input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'go on' }] }], stream: true, ...(previous ? { previous_response_id: previous } : {}) })

describe("Codex's later turns on its WebSocket, in flight at once, against a block rule", () => {
  it('each reserves the conversation it continues: the rule holds within one turn', async () => {
    // One session's conversation: three turns on one socket, each continuing the last.
    const first = await open()
    let previous: string | undefined
    for (let i = 1; i <= 3; i++) {
      first.ws.send(create(previous))
      await eventually(() => first.frames.filter((f) => f.type === 'response.completed').length === i, 20_000)
      previous = first.frames.filter((f) => f.type === 'response.completed').at(-1).response.id
    }
    await eventually(() => callsOf(t, KEY).length === 3, 20_000)
    expect(spentToday(t, KEY)).toBeCloseTo(3 * TURN_COST, 12)
    // All of them admitted, the key would spend $1.37 of its $1.
    expect((3 + BURST) * TURN_COST).toBeGreaterThan(LIMIT + TURN_COST)

    // Sub-agents' sockets each continue it at once; the upstream answers none until all are decided.
    holding = true
    const before = received
    const sockets = await Promise.all(Array.from({ length: BURST }, () => open()))
    for (const s of sockets) s.ws.send(create(previous))
    const refused = () => sockets.filter((s) => s.frames.some((f) => f.type === 'error')).length
    await eventually(() => received - before + refused() === BURST, 20_000)
    holding = false
    for (const send of held.splice(0)) send()
    await eventually(() => callsOf(t, KEY).length === 3 + BURST, 20_000)

    const ok = received - before
    expect(refused()).toBeGreaterThan(0)
    expect(ok).toBeGreaterThan(0)
    for (const s of sockets.filter((x) => x.frames.some((f) => f.type === 'error'))) {
      expect(s.frames.find((f) => f.type === 'error')).toMatchObject({ status: 429, error: { type: 'budget_exceeded' } })
    }
    const spent = spentToday(t, KEY)
    expect(spent).toBeCloseTo((3 + ok) * TURN_COST, 12)
    expect(spent).toBeLessThan(LIMIT + TURN_COST)
    for (const s of [first, ...sockets]) s.ws.close()
  })
})
