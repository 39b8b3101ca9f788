import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { BINS, binOf, binValue, decodeInto, decodeMap, encode, encodeDense, exactPercentile, histogramPercentile } from './histogram'

describe('latency histogram', () => {
  it('a bin stands for every latency in it within 1%', () => {
    fc.assert(
      fc.property(fc.double({ min: 1, max: 1e7, noNaN: true }), (ms) => {
        expect(Math.abs(binValue(binOf(ms)) / ms - 1)).toBeLessThan(0.01)
      }),
    )
  })

  it('bins grow with latency; under 1 ms is bin 0; the top bin catches the rest', () => {
    expect(binOf(0)).toBe(0)
    expect(binOf(0.99)).toBe(0)
    expect(binOf(1)).toBe(1)
    expect(binOf(Number.MAX_VALUE)).toBe(BINS - 1)
    expect(binOf(NaN)).toBe(0)
    fc.assert(fc.property(fc.double({ min: 0, max: 1e9, noNaN: true }), fc.double({ min: 0, max: 1e9, noNaN: true }), (a, b) => {
      if (a <= b) expect(binOf(a)).toBeLessThanOrEqual(binOf(b))
    }))
  })

  it('encodes sparse and decodes to the same counts', () => {
    const m = new Map([[0, 3], [17, 1], [BINS - 1, 4_000_000_000]])
    expect(decodeMap(encode(m))).toEqual(m)
    const dense = new Float64Array(BINS)
    decodeInto(encode(m), dense)
    decodeInto(encode(m), dense)
    expect(dense[17]).toBe(2)
    expect(dense[0]).toBe(6)
    expect(decodeMap(null).size).toBe(0)
  })

  it('nearest-rank percentiles', () => {
    const xs = [10, 20, 30, 40, 50, 60, 70, 80, 90, 100]
    expect(exactPercentile(xs, 0.5)).toBe(50)
    expect(exactPercentile(xs, 0.95)).toBe(100)
    expect(exactPercentile([7], 0.5)).toBe(7)
    expect(exactPercentile([], 0.5)).toBe(0)
    const h = new Float64Array(BINS)
    for (const x of xs) h[binOf(x)]++
    expect(Math.abs(histogramPercentile(h, xs.length, 0.5) / 50 - 1)).toBeLessThan(0.01)
    expect(Math.abs(histogramPercentile(h, xs.length, 0.95) / 100 - 1)).toBeLessThan(0.01)
    expect(histogramPercentile(h, 0, 0.5)).toBe(0)
  })
})

describe('encodeDense', () => {
  it('gives the sparse form of a dense histogram', () => {
    const m = new Map([[0, 3], [17, 1], [BINS - 1, 9]])
    const dense = new Float64Array(BINS)
    decodeInto(encode(m), dense)
    expect(encodeDense(dense).equals(encode(m))).toBe(true)
    expect(encodeDense(new Float64Array(BINS)).byteLength).toBe(0)
  })
})
