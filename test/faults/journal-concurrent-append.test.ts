import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { SpillJournal } from '../../src/main/ledger/pg/journal'
import { readSpill, spillFiles } from '../../src/main/reliability/spill'
import { makeCall } from '../dashboard/seed'

// The spill journal (both ledgers' while their database cannot be written) wrote each append at
// the size of the file as it was before the append before it had ended: two appends under way at
// once wrote at the same offset, the second's lines over the first's, tearing the file and losing
// calls the caller was told were on disk. It relied on every caller running one at a time.

describe('two appends to the spill journal at once', () => {
  it('are written one after the other: every call whole in the file, in order', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'burnrate-journal-concurrent-'))
    const journal = new SpillJournal(dir)
    try {
      const first = Array.from({ length: 50 }, (_, i) => makeCall({ session: `first-${i}-${'x'.repeat(200)}` }))
      const second = Array.from({ length: 3 }, (_, i) => makeCall({ session: `second-${i}` }))
      await Promise.all([journal.append(first), journal.append(second)])
      await journal.close()
      const [file] = spillFiles(dir)
      const text = readFileSync(file, 'utf8')
      // Every line is a whole call.
      for (const line of text.split('\n').filter(Boolean)) expect(() => JSON.parse(line)).not.toThrow()
      expect(readSpill(file).map((c) => c.session)).toEqual([...first, ...second].map((c) => c.session))
    } finally {
      await journal.close()
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
