import { describe, expect, it } from 'vitest'
import { JsonLines } from './json-lines'

const split = (chunks: (string | Buffer)[], max?: number, end = true) => {
  const out: string[] = []
  const l = new JsonLines((t) => out.push(t), max)
  for (const c of chunks) l.push(Buffer.isBuffer(c) ? c : Buffer.from(c))
  if (end) l.end()
  return { out, skipped: l.skipped }
}

describe('JsonLines: a JSON Lines body split into its lines as it passes', () => {
  it('joins lines cut across chunks (inside a multi-byte character too) and skips blank ones', () => {
    const text = Buffer.from('{"a":"é"}\n\n{"b":2}\r\n{"c":3}')
    const at = text.indexOf(0xc3) + 1 // inside é
    expect(split([text.subarray(0, at), text.subarray(at, at + 5), text.subarray(at + 5)]).out).toEqual(['{"a":"é"}', '{"b":2}\r', '{"c":3}'])
  })

  it('a last line without its newline counts only once the body ended', () => {
    expect(split(['{"a":1}\n{"b":'], undefined, false).out).toEqual(['{"a":1}'])
  })

  it('a line longer than the limit is skipped whole, the next one still read', () => {
    const r = split(['{"long":"', 'x'.repeat(50), 'y'.repeat(50), '"}\n{"ok":1}\n'], 64)
    expect(r.out).toEqual(['{"ok":1}'])
    expect(r.skipped).toBe(1)
  })
})
