import { describe, expect, it } from 'vitest'
import { createLogger } from '../log'
import { LedgerLog } from './ledger-log'

describe('LedgerLog', () => {
  it('logs once when writes start failing, once on recovery, and every drop', () => {
    const lines: string[] = []
    let now = 0
    const w = new LedgerLog(createLogger('info', (l) => lines.push(l)), () => now)
    const ok = { writable: true, pending: 0, dropped: 0, last_error: null }
    w.check(ok)
    expect(lines).toEqual([])
    w.check({ writable: false, pending: 3, dropped: 0, last_error: 'SQLITE_BUSY: database is locked' })
    w.check({ writable: false, pending: 9, dropped: 0, last_error: 'SQLITE_BUSY: database is locked' })
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatch(/warn .*cannot be written \(SQLITE_BUSY/)
    w.check({ writable: false, pending: 10, dropped: 2, last_error: 'x' })
    expect(lines[1]).toMatch(/error .*2 call\(s\) were dropped/)
    now = 42_000
    w.check({ ...ok, dropped: 2 })
    expect(lines[2]).toMatch(/info .*writable again after 42 s/)
    expect(lines).toHaveLength(3)
  })

  it('says calls that left memory onto the journal are on disk, not dropped', () => {
    const lines: string[] = []
    const w = new LedgerLog(createLogger('info', (l) => lines.push(l)))
    w.check({ writable: false, pending: 5, dropped: 0, left_on_disk: 3, overflowed: 0, last_error: 'SQLITE_BUSY: database is locked' })
    expect(lines).toHaveLength(2)
    expect(lines[1]).toMatch(/warn .*3 call\(s\) left memory.*not lost.*on disk/)
    expect(lines.join('\n')).not.toMatch(/dropped/)
    w.check({ writable: false, pending: 5, dropped: 0, left_on_disk: 3, overflowed: 0, last_error: 'SQLITE_BUSY: database is locked' })
    expect(lines).toHaveLength(2)
  })
})
