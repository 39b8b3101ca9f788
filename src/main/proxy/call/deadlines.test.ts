import { performance } from 'node:perf_hooks'
import { describe, expect, it } from 'vitest'
import { Deadlines } from './deadlines'

const until = async (cond: () => boolean, ms = 10_000) => {
  const end = Date.now() + ms
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time')
    await new Promise((r) => setTimeout(r, 5))
  }
}

describe('Deadlines (the proxied calls timeouts under one timer)', () => {
  it('fires each deadline once, never before its time, and not the cancelled ones', async () => {
    const d = new Deadlines()
    const fired: { n: number; late: number }[] = []
    const start = performance.now()
    const add = (n: number, ms: number) => d.add(ms, () => fired.push({ n, late: performance.now() - (start + ms) }))
    add(1, 60)
    const cancelled = add(2, 20)
    add(3, 10)
    add(4, 40)
    d.cancel(cancelled)
    d.cancel(cancelled) // twice is harmless
    await until(() => fired.length === 3)
    expect(fired.map((f) => f.n)).toEqual([3, 4, 1])
    for (const f of fired) expect(f.late).toBeGreaterThanOrEqual(-0.001)
    expect(d.size).toBe(0)
  })

  it('an earlier deadline added after a later one still fires on time; a deadline may add another', async () => {
    const d = new Deadlines()
    const order: string[] = []
    d.add(5_000, () => order.push('late'))
    d.add(15, () => {
      order.push('early')
      d.add(10, () => order.push('chained'))
    })
    await until(() => order.length === 2)
    expect(order).toEqual(['early', 'chained'])
    expect(d.size).toBe(1)
  })

  it('keeps the heap in order through many adds and cancels (against a plain list)', () => {
    let clock = 0
    const d = new Deadlines(() => clock)
    const live = new Map<number, ReturnType<Deadlines['add']>>()
    let seed = 7
    const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31)
    for (let i = 0; i < 1500; i++) {
      if (live.size > 0 && rnd() < 0.45) {
        const keys = [...live.keys()]
        const k = keys[Math.floor(rnd() * keys.length)]
        d.cancel(live.get(k)!)
        live.delete(k)
      } else {
        live.set(i, d.add(Math.floor(rnd() * 1000), () => {}))
      }
      const heap = (d as unknown as { heap: { at: number; i: number }[] }).heap
      expect(heap.length).toBe(live.size)
      for (let j = 0; j < heap.length; j++) {
        expect(heap[j].i).toBe(j)
        if (j > 0) expect(heap[(j - 1) >> 1].at).toBeLessThanOrEqual(heap[j].at)
      }
    }
    for (const x of live.values()) d.cancel(x)
    clock = 0
  })
})
