import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { isDeepStrictEqual } from 'node:util'
import * as original from '@pydantic/genai-prices'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseAst } from 'rollup/parseAst'
import { transformPriceLibrary } from '../../electron.vite.config'

/**
 * The build moves @pydantic/genai-prices' price table out of its code into a JSON file read with
 * `JSON.parse` (electron.vite.config.ts, `moveDataLiteralsToJson`: V8 would otherwise keep the
 * 800 KB literal's source text and boilerplate for the life of the process), and orders the
 * library's own identifiers by code units instead of `localeCompare` (which loads ICU's
 * collation data). The library as the build transforms it must price every model of its data
 * exactly as the library itself does.
 */
type Lib = typeof original
interface Model { id: string }
interface ProviderData { id: string; models: Model[] }

const SOURCE = createRequire(import.meta.url).resolve('@pydantic/genai-prices').replace(/index\.cjs$/, 'index.js')
let dir: string
let moved: Lib
let data: ProviderData[]

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'burnrate-price-data-'))
  const out = transformPriceLibrary(readFileSync(SOURCE, 'utf8'), (i, json) => {
    writeFileSync(join(dir, `data-${i}.json`), json)
    return `new URL('./data-${i}.json', import.meta.url).href`
  })
  writeFileSync(join(dir, 'index.js'), out.code)
  moved = (await import(pathToFileURL(join(dir, 'index.js')).href)) as Lib
  expect(out.json).toHaveLength(1) // the price table, and nothing else of this size
  data = JSON.parse(out.json[0]) as ProviderData[]
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** The outcome of a call, a thrown error's message included (the library throws for usage a model cannot price). */
function outcome(f: () => unknown): unknown {
  try {
    return { value: f() }
  } catch (err) {
    return { error: (err as Error).message }
  }
}

const USAGES: Record<string, number>[] = [
  { input_tokens: 1_234_567, output_tokens: 76_543 },
  { input_tokens: 300_000, output_tokens: 1_000, cache_read_tokens: 120_000, cache_write_tokens: 40_000 },
  { input_tokens: 9, output_tokens: 3, cache_write_tokens: 2, cache_write_1h_tokens: 1, web_searches: 2 },
]
// Before and after price changes the data records by date, and both sides of time-of-day prices.
const TIMES = [new Date('2024-01-01T00:00:00Z'), new Date('2025-07-01T03:30:00Z'), new Date('2026-11-23T17:45:00Z')]

describe('the price table moved to JSON by the build', () => {
  it('is the whole table', () => {
    expect(data.length).toBeGreaterThan(20)
    expect(data.reduce((n, p) => n + p.models.length, 0)).toBeGreaterThan(500)
    expect(data.map((p) => p.id)).toContain('anthropic')
    // The transformed module has no data literal left: its code is the library's functions.
    expect(readFileSync(join(dir, 'index.js'), 'utf8').length).toBeLessThan(40_000)
  })

  it('calls no localeCompare, and its unit keys and dimension names sort the same by code units as by localeCompare', () => {
    expect(readFileSync(join(dir, 'index.js'), 'utf8')).not.toContain('localeCompare')
    // The library's table of usage units (input_tokens: { dimensions: {...}, ... }), read from its code.
    const code = readFileSync(SOURCE, 'utf8')
    const program = parseAst(code) as unknown as { body: { type: string; declarations?: { init?: { type: string; start: number; end: number; properties?: { key: { name?: string } }[] } }[] }[] }
    const units = program.body
      .flatMap((st) => (st.type === 'VariableDeclaration' ? st.declarations! : []))
      .map((d) => d.init)
      .find((i) => i?.type === 'ObjectExpression' && i.properties!.some((p) => p.key.name === 'input_tokens'))!
    const table = new Function(`return (${code.slice(units.start, units.end)})`)() as Record<string, { dimensions: Record<string, string> }>
    const keys = Object.keys(table)
    const dimensions = [...new Set(keys.flatMap((k) => Object.keys(table[k].dimensions)))]
    expect(keys.length).toBeGreaterThan(30)
    expect(dimensions).toContain('modality')
    for (const names of [keys, dimensions]) {
      const byCodeUnits = [...names].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
      expect([...names].sort((a, b) => a.localeCompare(b))).toEqual(byCodeUnits)
    }
  })

  it('finds every provider as the library does', () => {
    for (const p of data) {
      expect(moved.findProvider({ providerId: p.id })).toStrictEqual(original.findProvider({ providerId: p.id }))
    }
  })

  it('prices every model of every provider exactly as the library does', () => {
    let priced = 0
    const differ: string[] = []
    for (const p of data) {
      for (const m of p.models) {
        for (const usage of USAGES) {
          for (const timestamp of TIMES) {
            const a = outcome(() => original.calcPrice(usage, m.id, { providerId: p.id, timestamp }))
            const b = outcome(() => moved.calcPrice(usage, m.id, { providerId: p.id, timestamp }))
            if (!isDeepStrictEqual(b, a)) differ.push(`${p.id} ${m.id} at ${timestamp.toISOString()}: ${JSON.stringify(b)} against ${JSON.stringify(a)}`)
            if ((a as { value?: { total_price?: number } }).value?.total_price !== undefined) priced++
          }
        }
      }
    }
    expect(differ).toEqual([])
    expect(priced).toBeGreaterThan(1000)
  })

  it("takes the library's price updates as the library does", () => {
    const newer = structuredClone(data)
    const anthropic = newer.find((p) => p.id === 'anthropic')! as ProviderData & { models: (Model & { prices: unknown })[] }
    anthropic.models = [{ ...anthropic.models[0], id: 'claude-test-update', match: { equals: 'claude-test-update' }, prices: { input_mtok: 7, output_mtok: 11 } } as never]
    for (const lib of [moved, original]) {
      lib.updatePrices(({ setProviderData }) => setProviderData(newer as never))
    }
    try {
      const usage = { input_tokens: 1_000_000, output_tokens: 1_000_000 }
      const a = original.calcPrice(usage, 'claude-test-update', { providerId: 'anthropic' })
      expect(a?.total_price).toBe(18)
      expect(moved.calcPrice(usage, 'claude-test-update', { providerId: 'anthropic' })).toStrictEqual(a)
    } finally {
      for (const lib of [moved, original]) lib.updatePrices(({ setProviderData }) => setProviderData(data as never))
    }
  })
})
