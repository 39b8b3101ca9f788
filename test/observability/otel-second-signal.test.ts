import http from 'node:http'
import { readFileSync } from 'node:fs'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixture, sseChunks } from '../support/fixtures'
import { eventually } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type BuiltServer, startBuiltServer } from '../load/harness'
import { OtelPipeline } from '../../src/main/otel/pipeline'
import { makeCall } from '../dashboard/seed'
import { otlpSum, startCollector } from './support'

/**
 * The built headless server, exporting over OTLP, stopped by a second SIGTERM while a stream is
 * under way: the stream is cut and recorded (503 burnrate_stopped), and the process exits without
 * waiting for the calls. The export was never told: the cut call, recorded in the ledger, had no
 * span, and the metric points since the last interval (60 s by default) were lost with the
 * process, so the collector's cost and token totals stayed below the ledger's for good.
 */

const STREAM = sseChunks(fixture('openai-chat/chat-stream-with-usage.sse'), false)
let upstream: MockUpstream
let collector: Awaited<ReturnType<typeof startCollector>>
beforeAll(async () => {
  upstream = await startMockUpstream(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, chunks: STREAM, stallAfterChunks: 3 }))
  collector = await startCollector()
})
afterAll(async () => {
  await upstream?.close()
  await collector?.close()
})

function startStream(url: string): Promise<{ ended: Promise<void> }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer sk-otel-sig-0001' } }, (res) => {
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

function spans(bodies: readonly any[]): any[] {
  return bodies.flatMap((b) => b.resourceSpans.flatMap((rs: any) => rs.scopeSpans.flatMap((ss: any) => ss.spans)))
}

describe('a stop with OTLP export on', () => {
  it.each([1, 2])('after %i SIGTERM(s), exports the cut call (its span and its cost) before the process exits', async (signals) => {
    collector.traces.length = 0
    collector.metrics.length = 0
    const server: BuiltServer = await startBuiltServer({ timezone: 'UTC', otel: { endpoint: collector.url, interval_ms: 60_000 } }, upstream.url)
    try {
      const s = await startStream(server.url)
      if (signals === 2) {
        server.child.kill('SIGTERM')
        await eventually(() => readFileSync(server.logFile, 'utf8').includes('SIGTERM: finishing calls under way'))
      }
      expect(await server.stop()).toBe(signals === 2 ? 1 : 0)
      await s.ended
      const db = new Database(server.dbFile, { readonly: true, fileMustExist: true })
      const rows = db.prepare('SELECT status, error, cost_usd FROM calls').all() as { status: number; error: string; cost_usd: number }[]
      db.close()
      expect(rows).toHaveLength(1)
      expect(rows[0]).toMatchObject({ status: 503, error: 'burnrate_stopped' })
      expect(rows[0].cost_usd).toBeGreaterThan(0)

      const sent = spans(collector.traces)
      expect(sent).toHaveLength(1)
      const status = sent[0].attributes.find((a: any) => a.key === 'http.response.status_code')
      expect(Number(status.value.intValue)).toBe(503)
      expect(otlpSum(collector.metrics, 'gen_ai.usage.cost', { 'gen_ai.request.model': 'gpt-4o-mini-2024-07-18' })).toBe(rows[0].cost_usd)
    } finally {
      await server.dispose()
    }
  })
})

describe("the OTLP pipeline's close, asked again while it closes", () => {
  it("waits for the first close's last export (a second signal during a stop's own close)", async () => {
    collector.metrics.length = 0
    const p = new OtelPipeline({ endpoint: collector.url, headers: {}, intervalMs: 60_000, timeoutMs: 5000, maxQueue: 100, traces: false, metrics: true, version: 'test' })
    p.observe(makeCall({ model: 'gpt-4o-mini', cost_usd: 0.25 }))
    const first = p.close()
    await p.close(1000)
    // The exit would come now: the points must have reached the collector.
    expect(otlpSum(collector.metrics, 'gen_ai.usage.cost', { 'gen_ai.request.model': 'gpt-4o-mini' })).toBe(0.25)
    await first
  })
})
