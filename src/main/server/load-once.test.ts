import { describe, expect, it } from 'vitest'
import { loadOnce } from './load-once'

describe('loadOnce', () => {
  it('runs the load once for every caller, during it and after it succeeded', async () => {
    let runs = 0
    const load = loadOnce(async () => ++runs)
    const [a, b] = await Promise.all([load(), load()])
    expect([a, b, await load(), runs]).toEqual([1, 1, 1, 1])
  })

  it('gives a failure to the callers that shared it, and runs the load again on the next call', async () => {
    let runs = 0
    const load = loadOnce(async () => {
      runs++
      if (runs === 1) throw new Error('first load failed')
      return runs
    })
    const shared = [load(), load()]
    for (const p of shared) await expect(p).rejects.toThrow('first load failed')
    expect(await load()).toBe(2)
    expect(await load()).toBe(2)
    expect(runs).toBe(2)
  })
})
