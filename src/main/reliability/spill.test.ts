import { appendFileSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import type { CallRecord } from '../ledger/record'
import { readSpill, spillFiles, writeSpill } from './spill'

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
      expect(() => writeSpill(dir, [row('x')], 1000)).toThrow()
      expect(spillFiles(join(dir, 'missing'))).toEqual([])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
