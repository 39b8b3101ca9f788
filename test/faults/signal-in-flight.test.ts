import http from 'node:http'
import { readFileSync } from 'node:fs'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { fixture, sseChunks } from '../support/fixtures'
import { eventually } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { readSpill, spillFiles } from '../../src/main/reliability/spill'
import { type BuiltServer, startBuiltServer } from '../load/harness'
import { type WsUpstream, startWsUpstream } from '../support/ws-upstream'

// The built headless server (out/main/cli.js) stopped by signal while a stream is under way: the
// upstream has billed the call, so it must be in the ledger (or its spill file) once the process is gone.

const STREAM = sseChunks(fixture('openai-chat/chat-stream-with-usage.sse'), false)
let upstream: MockUpstream
let wsUp: WsUpstream
beforeAll(async () => {
  // A Responses WebSocket turn that begins and then goes on (only its first event is sent).
  wsUp = await startWsUpstream({
    onConnection: (ws) =>
      ws.on('message', () =>
        ws.send(JSON.stringify({ type: 'response.created', sequence_number: 0, response: { id: 'resp_sig', object: 'response', model: 'gpt-4o-mini-2024-07-18', status: 'in_progress' } })),
      ),
  })
  // The first chunks, then silence: a long generation still under way.
  upstream = await startMockUpstream(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, chunks: STREAM, stallAfterChunks: 3 }))
})
afterAll(async () => {
  await wsUp.close()
  await upstream.close()
})

/** Starts a streaming call; resolves once its first bytes reached the client. */
function startStream(url: string): Promise<{ ended: Promise<void> }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer sk-sig-0001' } }, (res) => {
      const ended = new Promise<void>((r) => {
        res.on('close', () => r())
        res.on('error', () => r())
      })
      res.once('data', () => resolve({ ended }))
    })
    req.on('error', reject)
    req.end(JSON.stringify({ model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'What is the capital of France?' }] }))
  })
}

function storedCalls(dbFile: string): any[] {
  const db = new Database(dbFile, { readonly: true, fileMustExist: true })
  try {
    return db.prepare('SELECT * FROM calls').all()
  } finally {
    db.close()
  }
}

describe('a stream under way when the headless server is stopped', () => {
  it('SIGTERM: the stream still going past the grace is cut and recorded once, and the process exits 0', async () => {
    const server: BuiltServer = await startBuiltServer({ timezone: 'UTC' }, upstream.url)
    try {
      const s = await startStream(server.url)
      expect(await server.stop()).toBe(0)
      await s.ended
      expect(spillFiles(server.dataDir)).toEqual([])
      const calls = storedCalls(server.dbFile)
      expect(calls).toHaveLength(1)
      expect(calls[0]).toMatchObject({ status: 503, error: 'burnrate_stopped', streamed: 1, estimated: 1, priced: 1, input_tokens: 15 })
    } finally {
      await server.dispose()
    }
  })

  it('a second SIGTERM: the stream is cut and its call kept, not lost with the process', async () => {
    const server: BuiltServer = await startBuiltServer({ timezone: 'UTC' }, upstream.url)
    try {
      const s = await startStream(server.url)
      server.child.kill('SIGTERM')
      await eventually(() => readFileSync(server.logFile, 'utf8').includes('SIGTERM: finishing calls under way'))
      expect(await server.stop()).toBe(1)
      await s.ended
      const kept = storedCalls(server.dbFile).length + spillFiles(server.dataDir).reduce((n, f) => n + readSpill(f).length, 0)
      expect(kept).toBe(1)
      // Cut, its tokens estimated from what was sent and streamed so far: priced, not $0.
      const [call] = storedCalls(server.dbFile)
      expect(call).toMatchObject({ status: 503, error: 'burnrate_stopped', streamed: 1, estimated: 1, priced: 1, input_tokens: 15 })
      expect(call.cost_usd).toBeGreaterThan(0)
    } finally {
      await server.dispose()
    }
  })
})

/** Opens Codex's Responses WebSocket and starts a turn; resolves once its first event reached the client. */
function startTurn(url: string): Promise<{ closed: Promise<void> }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${url.replace('http', 'ws')}/v1/responses`, { headers: { authorization: 'Bearer sk-sig-ws-0001', 'openai-beta': 'responses_websockets=2026-02-06' } })
    const closed = new Promise<void>((r) => ws.on('close', () => r()))
    ws.on('error', () => {})
    ws.on('open', () => ws.send(JSON.stringify({ type: 'response.create', model: 'gpt-4o-mini', input: [{ role: 'user', content: [{ type: 'input_text', text: 'What is the capital of France?' }] }] })))
    ws.once('message', () => resolve({ closed }))
    ws.once('unexpected-response', (_req, res) => reject(new Error(`upgrade answered ${res.statusCode}`)))
  })
}

describe('a WebSocket turn under way when the headless server is stopped', () => {
  it.each([1, 2])('after %i SIGTERM(s), the turn is recorded once', async (signals) => {
    const server: BuiltServer = await startBuiltServer({ timezone: 'UTC' }, wsUp.url)
    try {
      const turn = await startTurn(server.url)
      if (signals === 2) {
        server.child.kill('SIGTERM')
        await eventually(() => readFileSync(server.logFile, 'utf8').includes('SIGTERM: finishing calls under way'))
      }
      expect(await server.stop()).toBe(signals === 2 ? 1 : 0)
      await turn.closed
      expect(spillFiles(server.dataDir)).toEqual([])
      const calls = storedCalls(server.dbFile)
      expect(calls).toHaveLength(1)
      // Burnrate cut it, not the client: 503 burnrate_stopped, never 499 client_aborted.
      expect(calls[0]).toMatchObject({ status: 503, error: 'burnrate_stopped', streamed: 1, estimated: 1, priced: 1, response_id: 'resp_sig' })
      expect(calls[0].input_tokens).toBeGreaterThan(0)
    } finally {
      await server.dispose()
    }
  })
})
