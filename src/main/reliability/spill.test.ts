import { appendFileSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import type { CallRecord } from '../ledger/record'
import type { ServerContext } from '../server/context'
import type { SideWrite } from '../ledger/side-writes'
import { ledgerSpill, readSpill, readSpilled, spillFiles, writeSpill } from './spill'

const row = (session: string) => ({ ts: 1, session, cost_usd: 0.5 }) as unknown as CallRecord

describe('spill files', () => {
  it('round-trip calls, skip a torn last line, and are listed oldest first', () => {
    const dir = mkdtempSync(join(tmpdir(), 'burnrate-spill-'))
    try {
      const a = writeSpill(dir, [row('a'), row('b')], 1000)
      const b = writeSpill(dir, [row('c')], 2000)
      appendFileSync(b, '{"ts": 3, "session": "tor')
      expect(spillFiles(dir)).toEqual([a, b])
      expect(readSpill(a).map((r) => r.session)).toEqual(['a', 'b'])
      expect(readSpill(b).map((r) => r.session)).toEqual(['c'])
      // A name taken in the same millisecond: the next free one, never the other file overwritten.
      const c = writeSpill(dir, [row('x')], 1000)
      expect(c).not.toBe(a)
      expect(readSpill(a).map((r) => r.session)).toEqual(['a', 'b'])
      expect(readSpill(c).map((r) => r.session)).toEqual(['x'])
      expect(spillFiles(join(dir, 'missing'))).toEqual([])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('replaying a spill file at start-up', () => {
  /** A ledger holding what it is given, whose flushes succeed `writable` times and then fail. */
  function start(dir: string, maxPending: number, writable: number) {
    const stored: string[] = []
    let side: SideWrite[] = []
    const spent: string[] = []
    let queue: CallRecord[] = []
    const logs: string[] = []
    /** What is left waiting for the database, with what removes the file once it is written. */
    const waiting: { rows: string[]; side: number; stored: () => void }[] = []
    const ledger = {
      restore(rows: CallRecord[], side: SideWrite[], stored: () => void) {
        waiting.push({ rows: rows.map((r) => r.session), side: side.length, stored })
      },
      kind: 'sqlite',
      spend: { addCall: (r: CallRecord) => spent.push(r.session) },
      record(r: CallRecord) {
        if (queue.length >= maxPending) throw new Error('past max_pending: the ledger would drop the oldest call')
        spent.push(r.session)
        queue.push(r)
      },
      keepWithNextBatch(w: SideWrite[]) {
        side.push(...w)
      },
      takeSide() {
        const kept = side
        side = []
        return kept
      },
      flush() {
        if (writable-- <= 0) return false
        stored.push(...side.map((w) => ('hold' in w ? `hold ${w.hold.responseId}` : 'other')), ...queue.map((r) => r.session))
        side = []
        queue = []
        return true
      },
      takePending() {
        const rows = queue
        queue = []
        return rows
      },
      // None of these calls is stored yet (test/faults/spill-kill-after-replay.test.ts has some that are).
      notStored: (rows: CallRecord[]) => rows,
    }
    const log = { debug() {}, info: (l: string) => logs.push(l), warn: (l: string) => logs.push(l), error: (l: string) => logs.push(l) }
    ledgerSpill({ config: { data_dir: dir, ledger: { max_pending: maxPending } }, ledger, log, onClose() {} } as unknown as ServerContext)
    return { stored, spent, logs, waiting }
  }
  const sessions = Array.from({ length: 7 }, (_, i) => `s${i}`)

  it('writes a file larger than ledger.max_pending whole, in chunks, and only then removes it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'burnrate-spill-'))
    try {
      writeSpill(dir, sessions.map(row), 1000)
      const { stored, spent, logs } = start(dir, 3, Infinity)
      expect(stored).toEqual(sessions)
      expect(spent).toEqual(sessions)
      expect(spillFiles(dir)).toEqual([])
      expect(logs).toEqual([expect.stringContaining('recovered 7 call(s)')])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('keeps in the file only the calls not yet stored when the database fails part way', () => {
    const dir = mkdtempSync(join(tmpdir(), 'burnrate-spill-'))
    try {
      const file = writeSpill(dir, sessions.map(row), 1000)
      const { stored, spent, logs, waiting } = start(dir, 3, 1)
      expect(stored).toEqual(['s0', 's1', 's2'])
      // They wait in the ledger too, to be written as soon as the database can take them.
      expect(waiting.map((w) => w.rows)).toEqual([['s3', 's4', 's5', 's6']])
      // Every call's spend counts meanwhile, once.
      expect(spent.sort()).toEqual(sessions)
      expect(spillFiles(dir)).toEqual([file])
      expect(readSpill(file).map((r) => r.session)).toEqual(['s3', 's4', 's5', 's6'])
      expect(logs).toEqual([expect.stringContaining('3 of its call(s) are recovered; 4 call(s) stay in')])
      // Written then: the file goes.
      waiting[0].stored()
      expect(spillFiles(dir)).toEqual([])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  const HOLD: SideWrite = { hold: { provider: 'openai', responseId: 'resp_1', keyHash: 'h', ts: 1, session: '', rule: 'r', amount: 5, until: 2 } }

  it('writes the rows kept with the calls (a budget hold) first, in the first chunk\'s transaction', () => {
    const dir = mkdtempSync(join(tmpdir(), 'burnrate-spill-'))
    try {
      writeSpill(dir, sessions.map(row), 1000, [HOLD])
      const { stored, logs } = start(dir, 3, Infinity)
      expect(stored).toEqual(['hold resp_1', ...sessions])
      expect(spillFiles(dir)).toEqual([])
      expect(logs).toEqual([expect.stringContaining('recovered 7 call(s) and 1 other row(s) (budget holds, key patterns)')])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('keeps the rows kept with the calls in the file while the database cannot take them', () => {
    const dir = mkdtempSync(join(tmpdir(), 'burnrate-spill-'))
    try {
      const file = writeSpill(dir, sessions.map(row), 1000, [HOLD])
      const { stored } = start(dir, 3, 0)
      expect(stored).toEqual([])
      expect(readSpilled(file)).toEqual({ rows: sessions.map(row), side: [HOLD] })
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
