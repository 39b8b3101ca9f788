import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { describe, expect, it } from 'vitest'
import { EXACT_CHARS, PIECE_CHARS, PieceCounter, countSample, loadCount, pieceEnd, sampleOf, sampleOfJoined } from './token-count'

const PROSE = readFileSync(resolve(__dirname, '../../../README.md'), 'utf8')
/** Degenerate model output: runs of one character or a short pattern. */
const PATTERNS = ['=', ' ', '\n', 'ha', 'x', '一', '😀', '-=']

describe('token counting in bounded pieces', () => {
  for (const enc of ['o200k_base', 'cl100k_base'] as const) {
    it(`${enc}: normal text counts exactly as it does whole`, async () => {
      const count = await loadCount(enc)
      expect(countSample(count, sampleOf(PROSE))).toBe(count(PROSE))
    })

    it(`${enc}: runs of one character stay within 2% of the whole count, of a short pattern within 30%`, async () => {
      const count = await loadCount(enc)
      for (const p of PATTERNS) {
        const text = p.repeat(Math.ceil(4096 / p.length))
        const whole = count(text)
        const pieces = countSample(count, sampleOf(text))
        // BPE merges a long run differently near each cut: e.g. "-=-=" gains ~4 tokens per piece.
        const bound = [...p].length === 1 || p === 'ha' ? 0.02 : 0.3
        expect(Math.abs(pieces - whole), `${JSON.stringify(p)}: ${pieces} vs ${whole}`).toBeLessThanOrEqual(Math.max(1, whole * bound))
      }
    })
  }

  it('never gives the tokenizer more than PIECE_CHARS at once, so its time is linear in the text', () => {
    let longest = 0
    let seen = 0
    const count = (t: string) => {
      longest = Math.max(longest, t.length)
      seen += t.length
      return 1
    }
    for (const p of [...PATTERNS, 'word ', 'a\u00a0b ']) {
      const text = p.repeat(Math.ceil(300_000 / p.length))
      seen = 0
      countSample(count, sampleOf(text))
      expect(seen).toBe(text.length)
    }
    expect(longest).toBeLessThanOrEqual(PIECE_CHARS)
  })

  it('counts at most EXACT_CHARS of a text and extrapolates the rest at the counted rate', () => {
    let seen = 0
    // One token per word of 8 characters, counted exactly.
    const count = (t: string) => {
      seen += t.length
      return t.split('a').length - 1
    }
    const text = 'abcdefg '.repeat(EXACT_CHARS / 2)
    const n = countSample(count, sampleOf(text))
    expect(seen).toBe(EXACT_CHARS)
    expect(n).toBeGreaterThanOrEqual(text.length / 8)
    expect(n).toBeLessThanOrEqual(text.length / 8 + 1)
  })

  it('a joined sample copies at most EXACT_CHARS but knows the whole length', () => {
    const big = 'y'.repeat(EXACT_CHARS)
    const s = sampleOfJoined(['ab', big, 'cd'])
    expect(s.total).toBe(2 + 1 + EXACT_CHARS + 1 + 2)
    expect(s.text.length).toBeLessThanOrEqual(EXACT_CHARS)
    expect(sampleOfJoined(['ab', 'cd'])).toEqual({ text: 'ab\ncd', total: 5 })
    expect(sampleOfJoined([])).toEqual({ text: '', total: 0 })
  })

  it('cuts before a space that ends a word, and never inside a surrogate pair', () => {
    const text = `${'word '.repeat(100)}`
    const end = pieceEnd(text, 0)
    expect(text[end]).toBe(' ')
    expect(text[end - 1]).toBe('d')
    const emoji = '😀'.repeat(500)
    let at = 0
    while (at < emoji.length) {
      const e = pieceEnd(emoji, at)
      expect(e).toBeGreaterThan(at)
      expect(e % 2).toBe(0)
      at = e
    }
  })

  it('counts text that looks like a special token as text instead of refusing it', async () => {
    const count = await loadCount('o200k_base')
    expect(countSample(count, sampleOf('the model stops at <|endoftext|> here'))).toBeGreaterThan(5)
  })

  it('a counter stepped with a small budget comes to the same count as one run at once', async () => {
    const count = await loadCount('cl100k_base')
    const sample = sampleOf(PROSE)
    const c = new PieceCounter(count, sample)
    let steps = 0
    while (!c.step(0)) steps++
    expect(steps).toBeGreaterThan(10)
    expect(c.result()).toBe(countSample(count, sample))
  })
})
