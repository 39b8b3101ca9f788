import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually, request } from '../support/http'
import {
  type BuiltServer,
  type LoadResult,
  type LoadUpstream,
  faultMix,
  loadFixtures,
  makeKeys,
  readLedger,
  runLoad,
  startBuiltServer,
  startLoadUpstream,
  statusCounts,
} from './harness'

/**
 * Faults under load, against the built server: 100 concurrent streams for 5 s where a tenth of
 * the calls each are reset mid-stream, stall, get a 529, or are hung up on by the client. Every
 * call is recorded exactly once, with the status that tells what happened.
 */

const fixtures = loadFixtures()
let upstream: LoadUpstream
let server: BuiltServer
let result: LoadResult

beforeAll(async () => {
  upstream = await startLoadUpstream(fixtures, 10, (id) => faultMix(id).upstream)
  server = await startBuiltServer({ upstream: { idle_timeout_ms: 500 } }, upstream.url)
  result = await runLoad({
    url: server.url,
    fixtures,
    concurrency: 100,
    durationMs: 5000,
    keys: makeKeys(4, 'faults'),
    idPrefix: 'faults',
    hangUp: (id) => faultMix(id).hangUp,
  })
}, 60_000)
afterAll(async () => {
  await server?.stop()
  await server?.dispose()
  await upstream?.close()
})

describe('faults under load', () => {
  it('records every call exactly once, whatever happened to it', async () => {
    expect(result.calls.length).toBeGreaterThan(500)
    const ledger = (await eventually(() => {
      const l = readLedger(server.dbFile, 'faults-')
      return l.count >= result.calls.length ? l : undefined
    }, 15_000))!
    expect(ledger.count).toBe(result.calls.length)
    expect(result.calls.filter((c) => !ledger.sessions.has(c.id)).map((c) => c.id)).toEqual([])
    expect(ledger.integrity).toBe('ok')
  })

  it('with the status of what happened: 200, 499 hung up, 502 reset, 504 stalled, 529 passed through', () => {
    const byStatus = statusCounts(server.dbFile, 'faults-')
    const tenth = result.calls.length / 10
    for (const status of [499, 502, 504, 529]) {
      expect(byStatus[status] ?? 0, `status ${status}`).toBeGreaterThan(tenth * 0.5)
      expect(byStatus[status] ?? 0, `status ${status}`).toBeLessThan(tenth * 1.5)
    }
    expect(byStatus[200]).toBeGreaterThan(tenth * 5)
    // Every call the client read whole is a 200 on record; a hung-up call is a 499, or a 200 when
    // the whole response had already been sent when the client hung up.
    const db = new Database(server.dbFile, { readonly: true })
    try {
      const status = new Map((db.prepare("SELECT session, status FROM calls WHERE session LIKE 'faults-%'").all() as { session: string; status: number }[]).map((r) => [r.session, r.status]))
      for (const c of result.completed) expect(status.get(c.id), c.id).toBe(200)
      for (const c of result.calls.filter((x) => faultMix(x.id).hangUp)) expect([200, 499], c.id).toContain(status.get(c.id))
    } finally {
      db.close()
    }
  })

  it('stays healthy', async () => {
    const h = (await request(`${server.url}/api/health`)).json()
    expect(h.status).toBe('ok')
    expect(h.ledger.dropped).toBe(0)
  })
})
