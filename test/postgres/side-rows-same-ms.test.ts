import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { keepUnwritten } from '../../src/main/budgets/unwritten-rows'
import { callRecord } from '../../src/main/desktop-logic/test-helpers'
import { SpillJournal } from '../../src/main/ledger/pg/journal'
import type { SideWrite } from '../../src/main/ledger/side-writes'
import { createLogger } from '../../src/main/log'
import { readSpill, readSpilled, spillFiles } from '../../src/main/reliability/spill'

// At a second signal's exit on PostgreSQL the ledger keeps its queue in its spill journal, then the
// budget holds and key patterns the instance's own SQLite file could not take go to a spill file of
// their own, named by the millisecond. When the journal had been opened in that same millisecond
// (a fast disk), the second file could not be made (its name was taken: EEXIST) and the rows were
// "could not be saved anywhere": lost. A name taken moves to the next millisecond, as the journal's does.

afterEach(() => {
  vi.useRealTimers()
})

describe('the side rows kept at a stop, in the millisecond the journal was opened', () => {
  it('go to a file of their own beside the journal', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'side-rows-same-ms-'))
    try {
      vi.useFakeTimers({ toFake: ['Date'] })
      vi.setSystemTime(1_765_000_000_000)
      const journal = new SpillJournal(dir)
      await journal.append([callRecord({ ts: 1, session: 'queued' })])
      await journal.close()
      const hold: SideWrite = { unhold: { provider: 'openai', responseId: 'resp_same_ms' } }
      let waiting = [hold]
      const lines: string[] = []
      keepUnwritten([{ flush: () => {}, takePending: () => [...waiting.splice(0)] }], dir, createLogger('info', (l) => lines.push(l)))
      waiting = []
      expect(lines.filter((l) => l.includes('could not be saved anywhere'))).toEqual([])
      const files = spillFiles(dir)
      expect(files).toHaveLength(2)
      expect(files.flatMap((f) => readSpilled(f).side)).toEqual([hold])
      expect(files.flatMap((f) => readSpill(f)).map((c) => c.session)).toEqual(['queued'])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
