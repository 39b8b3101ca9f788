import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { Estimator, MAX_QUEUED_CHARS } from './estimator'
import { countSample, loadCount, sampleOf } from './token-count'

const dir = mkdtempSync(join(tmpdir(), 'burnrate-estimator-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** A stand-in thread script: one that never answers, or one that dies at once. */
function script(name: string, body: string): string {
  const file = join(dir, name)
  writeFileSync(file, body)
  return file
}

const TEXT = 'The quick brown fox jumps over the lazy dog. '.repeat(2000)

describe('Estimator', () => {
  it('without a thread, counts on the main thread in slices to the same result as counting at once', async () => {
    const e = new Estimator()
    expect(e.threaded).toBe(false)
    const count = await loadCount('o200k_base')
    const [a, b] = await e.count('o200k_base', [sampleOf(TEXT), sampleOf('=')])
    expect(a).toBe(countSample(count, sampleOf(TEXT)))
    expect(b).toBe(1)
  })

  it('when its thread dies, counts what it had and what comes next on the main thread', async () => {
    const e = new Estimator(script('dies.mjs', 'throw new Error("broken thread")\n'))
    expect(e.threaded).toBe(true)
    const count = await loadCount('cl100k_base')
    const [n] = await e.count('cl100k_base', [sampleOf(TEXT)])
    expect(n).toBe(countSample(count, sampleOf(TEXT)))
    expect(e.threaded).toBe(false)
    const [m] = await e.count('cl100k_base', [sampleOf('hello world')])
    expect(m).toBe(2)
  })

  it('bounds the work waiting: past MAX_QUEUED_CHARS, and at settleNow(), a text is counted from its length', async () => {
    const e = new Estimator(script('silent.mjs', 'import { parentPort } from "node:worker_threads"\nparentPort.on("message", () => {})\n'))
    const big = 'a'.repeat(MAX_QUEUED_CHARS / 2)
    const first = e.count('o200k_base', [{ text: big, total: big.length }])
    const second = e.count('o200k_base', [{ text: big, total: big.length }])
    // The thread never answers; a third text would take the queue past its bound.
    const [third] = await e.count('o200k_base', [{ text: 'abcd'.repeat(10), total: 40 }])
    expect(third).toBe(10)
    e.settleNow()
    expect(await first).toEqual([big.length / 4])
    expect(await second).toEqual([big.length / 4])
    e.close()
  })

  it('lets go of a thread that answers nothing for stallMs: what it had is counted from its length, what comes next here', async () => {
    // Alive (its port open), never answering: as a tokenizer load that never settles would leave it.
    const e = new Estimator(script('stuck.mjs', 'import { parentPort } from "node:worker_threads"\nparentPort.on("message", () => {})\n'), { stallMs: 300 })
    expect(e.threaded).toBe(true)
    const [n] = await e.count('o200k_base', [{ text: 'abcd'.repeat(25), total: 100 }])
    expect(n).toBe(25)
    expect(e.threaded).toBe(false)
    const [m] = await e.count('cl100k_base', [sampleOf('hello world')])
    expect(m).toBe(2)
    e.close()
  })

  it('keeps a thread that answers, however long the counts waiting take in all', async () => {
    // Answers each count 100 ms after it is asked, one at a time: 1.5 s in all, more than stallMs.
    const e = new Estimator(
      script(
        'slow.mjs',
        'import { parentPort } from "node:worker_threads"\nconst q = []\nlet busy = false\nconst next = () => { const m = q.shift(); if (!m) { busy = false; return } busy = true; setTimeout(() => { parentPort.postMessage({ id: m.id, counts: m.samples.map(() => 7) }); next() }, 100) }\nparentPort.on("message", (m) => { if (m.type !== "count") return; q.push(m); if (!busy) next() })\n',
      ),
      { stallMs: 1000 },
    )
    const all = await Promise.all(Array.from({ length: 15 }, () => e.count('o200k_base', [sampleOf('hello')])))
    expect(all).toEqual(Array.from({ length: 15 }, () => [7]))
    expect(e.threaded).toBe(true)
    e.close()
  })
})
