import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { RANGES } from '../../shared/api'
import { BUCKET_SECONDS, RANGE_MS, rangeWindow, splitTiers, splitWindow } from './window'

describe('splitWindow', () => {
  it('rolled and raw parts cover the window exactly once, rolled on whole buckets', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1_600_000_000_000, max: 1_900_000_000_000 }),
        fc.integer({ min: 0, max: 40 * 86_400_000 }),
        fc.constantFrom(300_000, 3_600_000),
        (start, len, grain) => {
          const w = { start, end: start + len }
          const { rolled, raw } = splitWindow(w, grain)
          const parts = [...raw, ...(rolled ? [rolled] : [])].sort((a, b) => a.start - b.start)
          let at = w.start
          for (const p of parts) {
            expect(p.start).toBe(at)
            expect(p.end).toBeGreaterThan(p.start)
            at = p.end
          }
          expect(at).toBe(len === 0 ? w.start : w.end)
          if (rolled) {
            expect(rolled.start % grain).toBe(0)
            expect(rolled.end % grain).toBe(0)
          }
          // Raw parts are less than a bucket at each end of the rolled part; a window with no whole
          // bucket in it (up to two buckets long when it straddles one's edge) is read raw whole.
          if (rolled) for (const r of raw) expect(r.end - r.start).toBeLessThan(grain)
          else expect(Math.ceil(w.start / grain) * grain + grain).toBeGreaterThan(w.end)
        },
      ),
      // A window one bucket long that straddles a bucket's edge (once drawn at random in a full run).
      { examples: [[1_600_000_000_000, 3_600_000, 3_600_000]] },
    )
  })
})

describe('ranges', () => {
  it('every range gives 30 to 400 contiguous buckets', () => {
    for (const r of RANGES) {
      const size = BUCKET_SECONDS[r] * 1000
      for (const now of [1_700_000_000_000, 1_700_000_000_000 + size / 2, 1_700_000_000_001]) {
        const w = rangeWindow(r, now)
        const n = Math.floor(now / size) - Math.floor(w.start / size) + 1
        expect(n).toBeGreaterThanOrEqual(30)
        expect(n).toBeLessThanOrEqual(400)
      }
      expect(RANGE_MS[r] % size).toBe(0)
    }
  })
})

describe('splitTiers', () => {
  it('days in the middle, hours at their edges, raw calls for the rest; together exactly the window', () => {
    const tiers = [{ grain: 86_400_000 }, { grain: 3_600_000 }]
    fc.assert(
      fc.property(fc.integer({ min: 1_600_000_000_000, max: 1_900_000_000_000 }), fc.integer({ min: 0, max: 40 * 86_400_000 }), (start, len) => {
        const w = { start, end: start + len }
        const { rolled, raw } = splitTiers(w, tiers)
        const parts = [...raw, ...rolled.map((r) => r.window)].sort((a, b) => a.start - b.start)
        let at = w.start
        for (const p of parts) {
          expect(p.start).toBe(at)
          at = p.end
        }
        expect(at).toBe(len === 0 ? w.start : w.end)
        for (const r of rolled) {
          expect(r.window.start % r.tier.grain).toBe(0)
          expect(r.window.end % r.tier.grain).toBe(0)
        }
        // Raw calls are read only at the edges: under an hour each side, so under two hours in
        // all (a window holding no whole clock hour, e.g. 10:05 to 11:06, is read raw whole).
        expect(raw.reduce((s, r) => s + r.end - r.start, 0)).toBeLessThan(2 * 3_600_000)
        expect(rolled.filter((r) => r.tier.grain === 3_600_000).reduce((s, r) => s + r.window.end - r.window.start, 0)).toBeLessThan(2 * 86_400_000)
      }),
    )
  })
})
