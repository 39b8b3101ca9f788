import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { SpillJournal } from '../../src/main/ledger/pg/journal'
import { readSpill } from '../../src/main/reliability/spill'
import { callRecord } from '../../src/main/desktop-logic/test-helpers'

// A stop keeps the queue in the journal and closes it (Spill.keepRest); a call recorded after
// (a second signal's cut call, an estimate answered late, a second keepRest) opens a new file.
// Each append writes at the bytes of whole lines the journal counted: that count must be the new
// file's, or the call lands past a run of NUL bytes, a line no replay can read.
describe('the spill journal after a close', () => {
  it('writes a call appended after a close at the start of its new file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'journal-reopen-'))
    try {
      const j = new SpillJournal(dir)
      await j.append([callRecord({ ts: 1, model: 'gpt-4o-mini', cost_usd: 0.5 })])
      const first = await j.close()
      await j.append([callRecord({ ts: 2, model: 'gpt-4o-mini', cost_usd: 0.25 })])
      const second = await j.close()
      expect(second).not.toBe(first)
      expect(readFileSync(second!, 'utf8').charCodeAt(0)).toBe('{'.charCodeAt(0))
      expect(readSpill(second!).map((c) => c.cost_usd)).toEqual([0.25])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
