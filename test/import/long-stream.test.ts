import http from 'node:http'
import { appendFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { LogWatcher } from '../../src/main/import/watcher'
import { silentLogger } from '../../src/main/log'
import { Pricer } from '../../src/main/pricing/price'
import { fixture, sseChunks } from '../support/fixtures'
import { eventually, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'

/**
 * A Claude Code answer that streams through Burnrate for longer than the watcher's wait (10
 * minutes): Claude Code writes a line per content block as each ends, the early ones with the
 * message_start's placeholder output tokens, while the proxy records the call only when the
 * stream ends. Waiting from the answer's first line imported it while it still streamed, with its
 * partial usage; the proxy's record then came as a second call, and the answer's money counted
 * twice. The wait counts from the answer's latest line: it is matched to the proxy's record.
 */

// The recorded answer: msg_018E1hg8GoVTGEKQY3ovMcSJ, 20 tokens in, 5 out; held after its only content block ends.
const STREAM = sseChunks(fixture('anthropic/messages-stream-text.sse'), false)
const HELD_AFTER = STREAM.findIndex((c) => c.toString().includes('content_block_stop')) + 1
const MSG = 'msg_018E1hg8GoVTGEKQY3ovMcSJ'
const MODEL = 'claude-sonnet-4-5-20250929'
const MIN = 60_000

let upstream: MockUpstream
let t: TestServer
let home: string
let release: () => void = () => {}
beforeAll(async () => {
  upstream = await startMockUpstream(() => ({
    status: 200, headers: { 'content-type': 'text/event-stream' }, chunks: STREAM, holdAfterChunks: HELD_AFTER,
    release: new Promise<void>((r) => (release = r)),
  }))
  t = await startTestServer({ import: { watch: false }, timezone: 'UTC' }, upstream.url)
  home = mkdtempSync(join(tmpdir(), 'burnrate-long-stream-'))
  mkdirSync(join(home, '.claude/projects/-home-dev-shop'), { recursive: true })
})
afterAll(async () => {
  release()
  await t.cleanup()
  await upstream.close()
  rmSync(home, { recursive: true, force: true })
})

/** Starts a streamed Messages call through the proxy; resolves once its first bytes are back, with its end. */
function startStream(server: TestServer = t): Promise<{ ended: Promise<void> }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${server.url}/v1/messages`, {
      method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': 'sk-ant-long-stream-0000000001', 'anthropic-version': '2023-06-01' },
    }, (res) => {
      const ended = new Promise<void>((r) => res.on('close', () => r()))
      res.once('data', () => resolve({ ended }))
      res.resume()
    })
    req.on('error', reject)
    req.end(JSON.stringify({ model: MODEL, max_tokens: 1024, stream: true, messages: [{ role: 'user', content: 'count to 2' }] }))
  })
}

/** One transcript line as Claude Code writes it when a content block ends (its usage the answer's so far). */
function logBlock(file: string, ts: number, block: string, output: number): void {
  appendFileSync(file, JSON.stringify({
    type: 'assistant', sessionId: 'long', uuid: `u-${ts}`, cwd: '/home/dev/shop', timestamp: new Date(ts).toISOString(), requestId: 'req_long',
    message: {
      id: MSG, type: 'message', role: 'assistant', model: MODEL, content: [{ type: block }], stop_reason: null,
      usage: { input_tokens: 20, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: output },
    },
  }) + '\n')
}

describe('a Claude Code answer streaming through the proxy for longer than the import wait', () => {
  it('is not imported while it streams: the proxy\'s record is its one call, its money counted once', async () => {
    const { db, ledger } = t.server
    const file = join(home, '.claude/projects/-home-dev-shop/long.jsonl')
    const w = new LogWatcher({ db, ledger, pricer: new Pricer(), log: silentLogger, env: {}, home })
    const t0 = Date.now()
    const s = await startStream()
    // Its first block ended at once (placeholder usage); a second one 9 minutes later; the answer streams on.
    logBlock(file, t0 + 1000, 'thinking', 1)
    logBlock(file, t0 + 9 * MIN, 'tool_use', 1)
    // 11 minutes after the first line, 2 after the latest: the watcher's pass (the proxy has recorded nothing).
    const during = (await w.runOnce(t0 + 11 * MIN)).find((x) => x.agent === 'claude-code')
    expect(db.prepare('SELECT count(*) FROM calls').pluck().get()).toBe(0)
    expect(during).toMatchObject({ imported: 0, deferred: 1 })

    // The answer ends: the proxy records it, Claude Code writes its last block with the final usage.
    release()
    await s.ended
    await eventually(() => {
      ledger.flush()
      return db.prepare("SELECT count(*) FROM calls WHERE source = 'proxy'").pluck().get() === 1
    })
    logBlock(file, t0 + 12 * MIN, 'text', 5)
    const after = (await w.runOnce(t0 + 23 * MIN)).find((x) => x.agent === 'claude-code')
    await w.stop()
    expect(after).toMatchObject({ imported: 0, matched: 1, deferred: 0 })

    const calls = db.prepare('SELECT source, response_id, output_tokens, cost_usd FROM calls').all() as any[]
    expect(calls).toHaveLength(1)
    expect(calls[0]).toMatchObject({ source: 'proxy', response_id: MSG, output_tokens: 5 })
    // The dashboard's rollups and today's spend hold that one call, and nothing imported.
    ledger.flush()
    const day = db.prepare('SELECT SUM(requests) AS requests, SUM(cost_usd) AS cost FROM dash_day').get() as any
    expect(day.requests).toBe(1)
    expect(day.cost).toBeCloseTo(calls[0].cost_usd, 12)
    expect(ledger.spend.key('').month).toBe(0)
  })

  it('imported while one content block streamed on past the wait: the proxy\'s record, arriving after, supersedes it', async () => {
    // A server of its own: the ledger above holds this answer's proxied record already. Its proxy
    // does not look for the imported twin as it records the answer (a server stopped at that
    // moment: ./superseded-at-record.test.ts has the server's own look): the next read of the log does.
    const s2 = await startTestServer({ import: { watch: false }, timezone: 'UTC', budgets: { rules: [{ api_key_pattern: '*', daily_limit_usd: 1000, action: 'warn' }] } }, upstream.url, undefined, {
      create: { supersedeAfterMs: 3_600_000 },
    })
    try {
      const { db, ledger, context } = s2.server
      const file = join(home, '.claude/projects/-home-dev-shop/one-block.jsonl')
      const w = new LogWatcher({ db, ledger, pricer: new Pricer(), log: silentLogger, env: {}, home, budgets: () => context.budgets })
      const t0 = Date.now()
      const s = await startStream(s2)
      // Its first block ended at once; the next one streams for 11 minutes and writes nothing meanwhile.
      logBlock(file, t0 + 1000, 'thinking', 1)
      const during = (await w.runOnce(t0 + 11 * MIN)).find((x) => x.agent === 'claude-code')
      expect(during).toMatchObject({ imported: 1 })
      const partial = db.prepare("SELECT id, cost_usd FROM calls WHERE source = 'import'").get() as { id: number; cost_usd: number }
      expect(partial.cost_usd).toBeGreaterThan(0)
      expect(ledger.spend.key('').month).toBe(partial.cost_usd)
      const keylessSpent = async () => {
        const listed = (await request(`${s2.url}/api/dashboard/budgets`)).json()
        return listed.rules.find((r: any) => r.api_key_hash === '').windows.find((x: any) => x.period === 'daily').spent_usd
      }
      expect(await keylessSpent()).toBe(partial.cost_usd)

      release()
      await s.ended
      await eventually(() => {
        ledger.flush()
        return db.prepare("SELECT count(*) FROM calls WHERE source = 'proxy'").pluck().get() === 1
      })
      logBlock(file, t0 + 12 * MIN, 'tool_use', 5)
      const after = (await w.runOnce(t0 + 23 * MIN)).find((x) => x.agent === 'claude-code')
      expect(after).toMatchObject({ imported: 0, updated: 0, superseded: 1 })
      expect(after!.cost_usd).toBe(-partial.cost_usd)

      // The answer's money and tokens are the proxy's record, counted once: the imported row is at 0.
      const proxied = db.prepare("SELECT id, output_tokens, cost_usd FROM calls WHERE source = 'proxy'").get() as any
      expect(proxied.output_tokens).toBe(5)
      const imported = db.prepare("SELECT input_tokens, output_tokens, cost_usd, revision FROM calls WHERE source = 'import'").get() as any
      expect(imported).toMatchObject({ input_tokens: 0, output_tokens: 0, cost_usd: 0 })
      // Revised: a team member's Burnrate sends it again, at 0.
      expect(imported.revision).not.toBeNull()
      ledger.flush()
      const day = db.prepare('SELECT SUM(cost_usd) AS cost, SUM(output_tokens) AS output FROM dash_day').get() as any
      expect(day.cost).toBeCloseTo(proxied.cost_usd, 12)
      expect(day.output).toBe(5)
      // Today's spend and the `*` rule's meter no longer count the imported call.
      expect(ledger.spend.key('').month).toBe(0)
      expect(await keylessSpent()).toBe(0)
      // Its import key names the proxy's call: read again, nothing moves.
      expect(db.prepare('SELECT call_id FROM import_keys').pluck().all()).toEqual([proxied.id])
      logBlock(file, t0 + 12 * MIN + 1000, 'text', 5)
      const again = (await w.runOnce(t0 + 40 * MIN)).find((x) => x.agent === 'claude-code')
      await w.stop()
      expect(again).toMatchObject({ imported: 0, updated: 0, superseded: 0, duplicates: 1, cost_usd: 0 })
    } finally {
      await s2.cleanup()
    }
  })
})
