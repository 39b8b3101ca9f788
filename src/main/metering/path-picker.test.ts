import { describe, expect, it } from 'vitest'
import { PathPicker } from './path-picker'

const pick = (paths: string[], text: string, chunk = 5) => {
  const p = new PathPicker(paths)
  const b = Buffer.from(text)
  for (let i = 0; i < b.length; i += chunk) p.write(b.subarray(i, i + chunk))
  return p.end()
}

describe('PathPicker', () => {
  it('keeps only the values at its paths, in the document shape, array positions kept', () => {
    const o = pick(['$.id', '$.list.*.usage'], JSON.stringify({ id: 'x', big: 'y'.repeat(100), list: [{ usage: { n: 1 } }, { no: 1 }, { usage: { n: 3 }, text: 'z' }] }))
    expect(JSON.parse(JSON.stringify(o))).toEqual({ id: 'x', list: [{ usage: { n: 1 } }, null, { usage: { n: 3 } }] })
    expect(1 in (o!.list as unknown[])).toBe(false)
  })

  it('ignores what follows the document (a line\'s \\r), and gives nothing for JSON cut short or broken', () => {
    expect(pick(['$.a'], '{"a":1}\r')).toEqual({ a: 1 })
    expect(pick(['$.a'], '{"a":1')).toBeUndefined()
    expect(pick(['$.a'], '{"a":1,,}')).toBeUndefined()
  })

  it('never creates __proto__ under a wildcard (a hostile answer cannot reach Object.prototype)', () => {
    const o = pick(['$.*.x'], '{"__proto__":{"x":{"polluted":true}},"ok":{"x":2}}')
    expect(o).toMatchObject({ ok: { x: 2 } })
    expect(({} as any).x).toBeUndefined()
    expect(Object.getPrototypeOf(o)).toBeNull()
  })
})
