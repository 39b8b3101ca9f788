import { existsSync, readdirSync, writeFileSync } from 'node:fs'
import Database from 'better-sqlite3'
import { describe, expect, it } from 'vitest'
import { spillFiles, writeSpill } from '../../src/main/reliability/spill'
import { makeCall } from '../dashboard/seed'
import { startTestServer } from '../support/server'

/**
 * A crash inside a spill file's rewrite (after its temporary file was written, before the rename)
 * leaves `ledger-spill-<ms>.jsonl.tmp` beside the whole spill file. Nothing listed or removed it:
 * it stayed in the data folder for good. The next start removes it, and stores the calls once.
 */
describe('a rewrite of a spill file cut short by a crash', () => {
  it('leaves no temporary file after the next start, and its calls are stored once', async () => {
    const first = await startTestServer({})
    await first.stop()
    const rows = ['a', 'b', 'c'].map((session) => makeCall({ ts: Date.now() - 1000, cost_usd: 0.5, session, call_key: `k-${session}` }))
    const file = writeSpill(first.dir, rows)
    // The rewrite's temporary file, holding the calls still to be stored: the crash came before the rename.
    writeFileSync(`${file}.tmp`, rows.slice(1).map((r) => JSON.stringify(r)).join('\n') + '\n', { mode: 0o600 })
    const again = await startTestServer({}, undefined, first.dir)
    try {
      expect(spillFiles(first.dir)).toEqual([])
      expect(existsSync(`${file}.tmp`)).toBe(false)
      expect(readdirSync(first.dir).filter((f) => f.startsWith('ledger-spill-'))).toEqual([])
      const db = new Database(again.dbFile, { readonly: true })
      try {
        expect(db.prepare('SELECT session FROM calls ORDER BY session').pluck().all()).toEqual(['a', 'b', 'c'])
      } finally {
        db.close()
      }
    } finally {
      await again.cleanup()
    }
  })
})
