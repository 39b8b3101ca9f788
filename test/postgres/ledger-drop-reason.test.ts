import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { PgLedger } from '../../src/main/ledger/pg/pg-ledger'
import { createLogger } from '../../src/main/log'
import { LedgerLog } from '../../src/main/reliability/ledger-log'
import { makeCall } from '../dashboard/seed'
import { until, usePostgres } from '../support/pg-harness'

/**
 * The PostgreSQL ledger counts the calls it lets go past ledger.max_pending (memory full, and not
 * on disk) in `overflowed`, as the SQLite ledger does (test/faults/ledger-drop-reason.test.ts): the
 * log says more than ledger.max_pending calls waited, apart from rows PostgreSQL refused. Builds
 * before this one counted them only in `dropped`, so the log took them for drops of another
 * reason (told by whichever drop came last).
 */

const h = usePostgres({ upstream: false })

function watch(ledger: PgLedger): { lines: string[]; check: () => void } {
  const lines: string[] = []
  const log = new LedgerLog(createLogger('info', (l) => lines.push(l)))
  return { lines, check: () => log.check(ledger.status) }
}

const dropLines = (lines: string[]) => lines.filter((l) => / error .* were dropped/.test(l))

describe('the PostgreSQL ledger: calls past ledger.max_pending', () => {
  it('recorded faster than they are written: counted as overflowed, and the log says max_pending', async () => {
    const store = h.store(h.database())
    const ledger = new PgLedger(store, { flushIntervalMs: 60_000, maxPending: 5, timezone: 'UTC', dataDir: h.tempDir('burnrate-pgdrop-') }).start()
    const w = watch(ledger)
    for (let i = 0; i < 8; i++) ledger.record(makeCall({ session: `s${i}` }))
    w.check()
    expect(ledger.status.dropped).toBe(3)
    expect(ledger.status.overflowed).toBe(3)
    expect(dropLines(w.lines)).toEqual([expect.stringMatching(/error .*3 call\(s\) were dropped: more than ledger.max_pending calls waited for the database \(3 in all\)/)])
    // The others are stored.
    expect(await ledger.flushed()).toBe(true)
    const rows = await store.all<{ session: string }>('SELECT session FROM calls ORDER BY id')
    expect(rows.map((r) => r.session)).toEqual(['s3', 's4', 's5', 's6', 's7'])
    await ledger.close()
  })

  it('while PostgreSQL is away and the data folder cannot hold a spill file: every call lost is counted as overflowed', async () => {
    // A data folder beneath a plain file: no spill journal can be written there.
    const file = join(h.tempDir('burnrate-pgdrop-'), 'not-a-folder')
    writeFileSync(file, '')
    const away = h.store('postgres://burnrate@127.0.0.1:1/none')
    const said: string[] = []
    const log = createLogger('info', (l) => said.push(l))
    const ledger = new PgLedger(away, { flushIntervalMs: 20, maxPending: 5, timezone: 'UTC', dataDir: join(file, 'data'), log }).start()
    const w = watch(ledger)
    for (let i = 0; i < 8; i++) ledger.record(makeCall({ session: `a${i}` }))
    expect(await ledger.flushed()).toBe(false)
    // The journal was tried, and failed, before these: they too leave memory with nowhere to go.
    await until('the spill tried', () => said.some((l) => l.includes('cannot be spilled to disk')))
    for (let i = 0; i < 4; i++) ledger.record(makeCall({ session: `b${i}` }))
    await until('every call past the bound counted', () => ledger.status.dropped === 7)
    w.check()
    expect(ledger.status.overflowed).toBe(7)
    expect(ledger.status.left_on_disk ?? 0).toBe(0)
    expect(dropLines(w.lines)).toEqual([expect.stringMatching(/error .*7 call\(s\) were dropped: more than ledger.max_pending calls waited for the database \(7 in all\)/)])
    await ledger.close()
  })
})
