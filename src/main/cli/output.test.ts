import { describe, expect, it } from 'vitest'
import { csvText } from '../dashboard/calls'
import { csvChunks, jsonChunks } from './output'

describe('jsonChunks', () => {
  it('adds up to JSON.stringify(value, null, 2) and a line break, whatever the list holds', () => {
    const rows = Array.from({ length: 2500 }, (_, i) => ({ key: i % 3 ? `s-${i}` : '\n  "rows": []\n', n: i, models: ['a', 'b'], nested: { x: [1, { y: null }] } }))
    for (const value of [
      { kind: 'session', rows, total_rows: 2500, totals: { requests: 1 } },
      { kind: 'session', rows: [], total_rows: 0, totals: {} },
      { rows: [{ only: true }] },
      { a: '"rows": []', rows: [1, 'two', null], z: [[]] },
    ]) {
      const chunks = [...jsonChunks(value, 'rows')]
      expect(chunks.join('')).toBe(JSON.stringify(value, null, 2) + '\n')
      if (value.rows.length > 1000) expect(chunks.length).toBeGreaterThan(1)
    }
  })
})

describe('csvChunks', () => {
  it('is the head and a CRLF line per row, text cells as the export writes them, in chunks', () => {
    const rows = Array.from({ length: 2500 }, (_, i) => [`=s,${i}`, i, i % 2 === 0, null])
    const chunks = [...csvChunks(['key', 'n', 'b', 'x'], rows, (r) => r)]
    expect(chunks.length).toBeGreaterThan(1)
    const lines = chunks.join('').split('\r\n')
    expect(lines).toHaveLength(2502)
    expect(lines[0]).toBe('key,n,b,x')
    expect(lines[2]).toBe(`${csvText('=s,1')},1,false,`)
    expect(lines[2501]).toBe('')
    expect([...csvChunks(['key'], [], (r) => r)]).toEqual(['key\r\n'])
  })
})
