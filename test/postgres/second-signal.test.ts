import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { type BuiltServer, startBuiltServer } from '../load/harness'
import { fixture } from '../support/fixtures'
import { eventually, postJson, request } from '../support/http'
import { holdLock, until, usePostgres } from '../support/pg-harness'
import type { PostgresStore } from '../../src/main/storage/postgres'

// The built headless server (out/main/cli.js) on a PostgreSQL ledger, stopped while PostgreSQL
// does not take its writes (another session holds the calls table locked). The calls it had
// answered and queued must be in its spill journal when it exits, and in PostgreSQL once after
// the restart; and the stop must not wait for the stuck write: before, a second signal started a
// write and exited before it could end (calls younger than the journal's 250 ms were in memory
// only, and lost), and a single signal's stop waited for the stuck INSERT's query timeout (a
// minute) before the process could end.

const h = usePostgres({
  upstream: () => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('openai-chat/chat-nonstream-cached.json') }),
})

const KEY = { authorization: 'Bearer sk-second-signal-000000000001' }
const call = (url: string) => postJson(`${url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [] }, KEY)
const stored = async (store: PostgresStore) => (await store.all<{ n: number; keys: number }>('SELECT count(*) AS n, count(DISTINCT call_key) AS keys FROM calls'))[0]

/** A server on a new database that has stored one call, then three more answered and queued behind the lock. */
async function queuedBehindLock(): Promise<{ server: BuiltServer; store: PostgresStore; config: Record<string, unknown>; lock: { release(): Promise<void> } }> {
  const url = h.database()
  const config = { timezone: 'UTC', storage: { url } }
  const server = await startBuiltServer(config, h.upstream.url)
  const store = h.store(url)
  // The schema is in place (the server stored a call) before the table is locked.
  expect((await call(server.url)).status).toBe(200)
  await until('the first call stored', async () => (await stored(store)).n === 1)
  // Another session's lock on the table: INSERTs wait, reads do not.
  const lock = await holdLock(store, 'LOCK TABLE calls IN EXCLUSIVE MODE')
  for (let i = 0; i < 3; i++) expect((await call(server.url)).status).toBe(200)
  await eventually(async () => (await request(`${server.url}/api/health`)).json().ledger.pending === 3)
  return { server, store, config, lock }
}

/** Lets go of the lock, then restarts on the stopped server's folder: its journal is written, four calls in all, each once. */
async function restartStoresEachOnce(server: BuiltServer, store: PostgresStore, config: Record<string, unknown>, lock: { release(): Promise<void> }): Promise<void> {
  await lock.release()
  const again = await startBuiltServer(config, h.upstream.url, server.dataDir)
  try {
    await until('the kept calls stored', async () => (await stored(store)).n >= 4)
    expect(await again.stop()).toBe(0)
    expect(await stored(store)).toEqual({ n: 4, keys: 4 })
    expect(readFileSync(again.logFile, 'utf8')).toMatch(/wrote 3 call\(s\) kept in .*ledger-spill-\d+\.jsonl to PostgreSQL/)
  } finally {
    await again.dispose()
    await server.dispose()
  }
}

describe('a PostgreSQL server stopped while PostgreSQL does not take its writes', () => {
  it('by a second signal: keeps the calls it queued in its spill journal, and the restart stores each once', async () => {
    const { server, store, config, lock } = await queuedBehindLock()
    try {
      // Two at once: the second comes while the first stop waits for the write under way.
      server.child.kill('SIGTERM')
      await eventually(() => readFileSync(server.logFile, 'utf8').includes('SIGTERM: finishing calls under way'))
      expect(await server.stop()).toBe(1)
      const log = readFileSync(server.logFile, 'utf8')
      expect(log).toContain('SIGTERM again: exiting without waiting')
      // A new database read before the ledger made its schema is not a failure to report.
      expect(log).not.toContain('could not read the sessions')
      expect(log).toMatch(/exiting before they were written to PostgreSQL; 3 call\(s\) kept in .*ledger-spill-\d+\.jsonl until the next start/)
    } catch (err) {
      await lock.release()
      await server.dispose()
      throw err
    }
    await restartStoresEachOnce(server, store, config, lock)
  })

  it('by one signal: ends while the lock is still held, its queue in the spill journal, and the restart stores each once', async () => {
    const { server, store, config, lock } = await queuedBehindLock()
    try {
      server.child.kill('SIGTERM')
      // The ledger waits 10 s for its write, then spills; the pool's close does not wait for the
      // stuck INSERT (its query timeout is a minute). The bound only limits a failure.
      await eventually(() => server.child.exitCode !== null, 45_000)
      expect(server.child.exitCode).toBe(0)
      expect(readFileSync(server.logFile, 'utf8')).toMatch(/PostgreSQL did not take the last writes in time; 3 call\(s\) kept in .*ledger-spill-\d+\.jsonl until the next start/)
    } catch (err) {
      await lock.release()
      await server.dispose()
      throw err
    }
    await restartStoresEachOnce(server, store, config, lock)
  })
})
