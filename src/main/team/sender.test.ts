import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type Database from 'better-sqlite3'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { MAX_TIMER_MS } from '../config/schema'
import { INSERT_CALL_SQL, callValues } from '../ledger/columns'
import { openDatabase } from '../ledger/db'
import { silentLogger } from '../log'
import { backoffMs } from './backoff'
import { retryAfter } from '../http/retry-after'
import { TeamSender } from './sender'

describe('backoff', () => {
  it('doubles from 1 s up to the longest wait, with half of it random', () => {
    expect([1, 2, 3, 4].map((n) => backoffMs(n, 60_000, null, () => 0))).toEqual([500, 1000, 2000, 4000])
    expect([1, 2, 3, 4].map((n) => backoffMs(n, 60_000, null, () => 1))).toEqual([1000, 2000, 4000, 8000])
    expect(backoffMs(40, 60_000, null, () => 1)).toBe(60_000)
    expect(backoffMs(40, 60_000, null, () => 0)).toBe(30_000)
  })

  it('never waits less than the server asked with Retry-After', () => {
    expect(backoffMs(1, 60_000, 7_000, () => 0)).toBe(7_000)
    expect(retryAfter('7')).toBe(7_000)
    expect(retryAfter(new Date(10_000).toUTCString(), 4_000)).toBe(6_000)
    expect(retryAfter('soon')).toBeNull()
    expect(retryAfter(null)).toBeNull()
  })

  it('waits at most as long as a timer can for a Retry-After of a month (longer fires at once)', () => {
    const month = 30 * 24 * 3600 * 1000
    expect(backoffMs(1, 60_000, retryAfter(String(month / 1000)), () => 0)).toBe(MAX_TIMER_MS)
    expect(backoffMs(1, 60_000, retryAfter(new Date(month).toUTCString(), 0), () => 0)).toBe(MAX_TIMER_MS)
    expect(backoffMs(1, 60_000, retryAfter('9'.repeat(400)), () => 0)).toBe(MAX_TIMER_MS)
  })
})

describe('the sender', () => {
  let dir = ''
  let db: Database.Database | null = null
  let server: http.Server | null = null
  let sender: TeamSender | null = null
  afterEach(async () => {
    await sender?.stop()
    server?.closeAllConnections()
    await new Promise((r) => (server ? server.close(r) : r(null)))
    db?.close()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  it('retries a 503 after the Retry-After the server gave, and then sends the same batch', async () => {
    dir = mkdtempSync(join(tmpdir(), 'burnrate-sender-'))
    db = openDatabase(join(dir, 'burnrate.db'))
    const insert = db.prepare(INSERT_CALL_SQL)
    for (let i = 0; i < 3; i++) {
      insert.run(
        callValues(
          {
            ts: Date.now(), provider: 'openai', model: 'gpt-4o-mini', endpoint: '/v1/chat/completions', api_key_hash: '', key_hint: '',
            tenant: '', agent: '', session: '', status: 200, streamed: false, input_tokens: 10, output_tokens: 5, cache_read_tokens: 0,
            cache_write_tokens: 0, cache_write_1h_tokens: 0, reasoning_tokens: 0, cost_usd: 0.01 * (i + 1), priced: true, estimated: false,
            latency_ms: 5, error: null,
          },
          [],
        ),
      )
    }
    const seen: { at: number; ids: number[]; auth: string | undefined }[] = []
    server = http.createServer(async (req, res) => {
      let body = ''
      for await (const c of req) body += c
      seen.push({ at: Date.now(), ids: JSON.parse(body).calls.map((c: { id: number }) => c.id), auth: req.headers.authorization })
      if (seen.length === 1) {
        res.writeHead(503, { 'retry-after': '2', 'content-type': 'application/json' })
        res.end(JSON.stringify({ error: { type: 'service_unavailable', message: 'busy' } }))
        return
      }
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ accepted: 2, duplicates: 0, rejected: [] }))
    })
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r))
    const url = `http://user:secret@127.0.0.1:${(server.address() as AddressInfo).port}/`
    sender = new TeamSender({ db, url, token: 'tok-123456789abcdef', batchSize: 2, maxBackoffMs: 100, log: silentLogger }).start()
    while (seen.length < 3) await new Promise((r) => setTimeout(r, 20))
    // Retry-After (2 s) beats the configured longest backoff (100 ms).
    expect(seen[1].at - seen[0].at).toBeGreaterThanOrEqual(1900)
    expect(seen.map((s) => s.ids)).toEqual([[1, 2], [1, 2], [3]])
    expect(seen[0].auth).toBe('Bearer tok-123456789abcdef')
    // The address is shown without its credentials.
    expect(sender.status().url).toBe(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)
    while (sender.status().backlog > 0) await new Promise((r) => setTimeout(r, 20))
    expect(db.prepare('SELECT last_id FROM team_cursor').pluck().get()).toBe(3)
  })
  it('waits for a Retry-After of a month (as long as a timer can) instead of retrying at once, and says when', async () => {
    dir = mkdtempSync(join(tmpdir(), 'burnrate-sender-'))
    db = openDatabase(join(dir, 'burnrate.db'))
    db.prepare(INSERT_CALL_SQL).run(
      callValues(
        {
          ts: Date.now(), provider: 'openai', model: 'gpt-4o-mini', endpoint: '/v1/chat/completions', api_key_hash: '', key_hint: '',
          tenant: '', agent: '', session: '', status: 200, streamed: false, input_tokens: 10, output_tokens: 5, cache_read_tokens: 0,
          cache_write_tokens: 0, cache_write_1h_tokens: 0, reasoning_tokens: 0, cost_usd: 0.01, priced: true, estimated: false,
          latency_ms: 5, error: null,
        },
        [],
      ),
    )
    let hits = 0
    server = http.createServer(async (req, res) => {
      for await (const _ of req) void _
      hits++
      // A team server (or a proxy in front of it) in maintenance for 30 days.
      res.writeHead(503, { 'retry-after': String(30 * 24 * 3600), 'content-type': 'application/json' })
      res.end(JSON.stringify({ error: { type: 'service_unavailable', message: 'maintenance' } }))
    })
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r))
    // Node fires a timer longer than MAX_TIMER_MS after 1 ms: every wait must fit in one.
    const timers = vi.spyOn(globalThis, 'setTimeout')
    try {
      sender = new TeamSender({ db, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, token: 'tok-123456789abcdef', batchSize: 10, maxBackoffMs: 300_000, log: silentLogger }).start()
      while (sender.status().retry_at === null) await new Promise((r) => setTimeout(r, 20))
      const waits = timers.mock.calls.map((c) => c[1] ?? 0)
      expect(Math.max(...waits)).toBe(MAX_TIMER_MS)
    } finally {
      timers.mockRestore()
    }
    // retry_at tells the real next try: about 24.8 days away.
    expect(Date.parse(sender.status().retry_at!) - Date.now()).toBeGreaterThan(MAX_TIMER_MS - 60_000)
    expect(hits).toBe(1)
  })
})
