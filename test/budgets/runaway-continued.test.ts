import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { eventually } from '../support/http'
import { type TestServer, startTestServer } from '../support/server'
import { type WsUpstream, startWsUpstream } from '../support/ws-upstream'
import { callsOf } from './support'

/**
 * Codex on its Responses WebSocket sends each later turn as what is new since its last response
 * (`previous_response_id`): the tool's output alone, not the conversation. The loop check read
 * the tail of a turn's own `input`, which held fewer than three messages, so it never counted a
 * Codex turn: an agent calling the same tool and getting the same output again and again went on
 * under `runaway.loop.action: block`. A continued turn's tail is now its input after the input of
 * the session's turn before it, and a turn is a new one when it continues another response.
 */
const KEY = 'sk-loop-codex-aaaaaaaaaaaa-0001'

let up: WsUpstream
let t: TestServer
let answered = 0

beforeAll(async () => {
  up = await startWsUpstream({
    onConnection: (ws) => {
      ws.on('message', (data, binary) => {
        const frame = JSON.parse(String(data))
        if (binary || frame.type !== 'response.create') return
        const n = ++answered
        // A person's "continue" gets a new answer each time (its length with it); the stuck model's call is the same.
        const output = JSON.stringify(frame.input).includes('"continue"') ? 20 + n : 20
        const resp = { id: `resp_loop${n}`, object: 'response', model: 'gpt-5-2025-08-07', status: 'in_progress' }
        // The model asks for the same command every turn.
        const call = { type: 'function_call', id: `fc_${n}`, call_id: `call_${n}`, name: 'shell', arguments: '{"command":["cat","notes.txt"]}', status: 'completed' }
        const usage = { input_tokens: 200, input_tokens_details: { cached_tokens: 0 }, output_tokens: output + 30, output_tokens_details: { reasoning_tokens: 30 }, total_tokens: 250 + output }
        ws.send(JSON.stringify({ type: 'response.created', sequence_number: 0, response: resp }))
        ws.send(JSON.stringify({ type: 'response.output_item.done', sequence_number: 1, output_index: 0, item: call }))
        ws.send(JSON.stringify({ type: 'response.completed', sequence_number: 2, response: { ...resp, status: 'completed', output: [call], usage } }))
      })
    },
  })
  t = await startTestServer({ timezone: 'UTC', runaway: { loop: { action: 'block', repeats: 3 } } }, up.url)
})
afterAll(async () => {
  await t.cleanup()
  await up.close()
})

function open(session = 'codex-loop-1'): Promise<{ ws: WebSocket; frames: any[] }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${t.url.replace('http', 'ws')}/v1/responses`, {
      headers: { authorization: `Bearer ${KEY}`, 'user-agent': 'codex_exec/0.169.0', 'openai-beta': 'responses_websockets=2026-02-06', 'x-burnrate-session': session },
    })
    const frames: any[] = []
    ws.on('message', (d) => frames.push(JSON.parse(String(d))))
    ws.on('open', () => resolve({ ws, frames }))
    ws.on('error', reject)
  })
}

const ended = (frames: any[]) => frames.filter((f) => f.type === 'response.completed' || f.type === 'error').length

describe("a Codex agent stuck in a loop on its Responses WebSocket (each turn continues the last response)", () => {
  it('is refused as a loop once the same tool output follows the same tool output `repeats` times', async () => {
    const s = await open()
    // Its first turn: the whole conversation.
    s.ws.send(JSON.stringify({ type: 'response.create', model: 'gpt-5', stream: true, input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'summarise notes.txt' }] }] }))
    await eventually(() => ended(s.frames) === 1)
    // Every later turn: the command's output (the same each time), continuing the last response.
    for (let turn = 2; turn <= 8 && !s.frames.some((f) => f.type === 'error'); turn++) {
      const previous = s.frames.filter((f) => f.type === 'response.completed').at(-1).response.id
      const input = [{ type: 'function_call_output', call_id: `call_${turn - 1}`, output: '{"output":"cat: notes.txt: No such file or directory\\n","metadata":{"exit_code":1}}' }]
      s.ws.send(JSON.stringify({ type: 'response.create', model: 'gpt-5', stream: true, previous_response_id: previous, input }))
      await eventually(() => ended(s.frames) === turn)
    }
    const refusal = s.frames.find((f) => f.type === 'error')
    expect(refusal, 'no turn was refused as a loop').toBeDefined()
    expect(refusal.status).toBe(429)
    expect(refusal.error.code).toBe('loop_detected')
    // Refused before it went upstream: the turns up to the loop's were answered, no more.
    expect(answered).toBe(s.frames.filter((f) => f.type === 'response.completed').length)
    await eventually(() => callsOf(t, KEY).some((c) => c.error === 'loop_detected'))
    s.ws.close()
  })

  it('a working session (a new output each turn) is never a loop, nor a person sending the same words at each answer, nor one turn sent again and again (retries)', async () => {
    const run = async (session: string, output: (turn: number) => unknown, previous: (frames: any[]) => string) => {
      const s = await open(session)
      s.ws.send(JSON.stringify({ type: 'response.create', model: 'gpt-5', stream: true, input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'fix the tests' }] }] }))
      await eventually(() => ended(s.frames) === 1)
      for (let turn = 2; turn <= 8; turn++) {
        const o = output(turn)
        const input = [typeof o === 'string' ? { type: 'function_call_output', call_id: `call_${turn}`, output: o } : o]
        s.ws.send(JSON.stringify({ type: 'response.create', model: 'gpt-5', stream: true, previous_response_id: previous(s.frames), input }))
        await eventually(() => ended(s.frames) === turn)
      }
      s.ws.close()
      return s.frames.filter((f) => f.type === 'error')
    }
    const last = (frames: any[]) => frames.filter((f) => f.type === 'response.completed').at(-1).response.id
    expect(await run('codex-working', (turn) => `{"output":"step ${turn} done","metadata":{"exit_code":0}}`, last)).toEqual([])
    // A person typing the same word at each answer: the answers between differ.
    const more = { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'continue' }] }
    expect(await run('codex-continue', () => more, last)).toEqual([])
    // The same turn sent again and again: it continues the same response each time.
    expect(await run('codex-retrying', () => '{"output":"ok","metadata":{"exit_code":0}}', (frames) => frames.find((f) => f.type === 'response.completed').response.id)).toEqual([])
  })
})
