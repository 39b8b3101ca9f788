import { describe, expect, it } from 'vitest'
import { keyIdentity } from './attribution'
import { type Admission, type CallContext, type CallGate, everyCredential } from './gate'

function ctxWith(keys: string[]): CallContext {
  const billed = keyIdentity(keys[0] ?? '')
  return { ...billed, credentials: keys.length > 1 ? keys.map(keyIdentity) : undefined } as unknown as CallContext
}

/** A gate that refuses keys starting with "blocked" and logs every admit and settle. */
function recordingGate() {
  const log: string[] = []
  const gate: CallGate = {
    admit(ctx): Admission {
      log.push(`admit ${ctx.apiKey}`)
      if (ctx.apiKey.startsWith('blocked')) return { refuse: { status: 429, headers: {}, body: null, reason: 'budget_exceeded' } }
      return { headers: { 'x-burnrate-budget-warning': ctx.apiKey }, settle: (c) => void log.push(`settle ${ctx.apiKey} ${c}`) }
    },
  }
  return { gate, log }
}

describe('everyCredential', () => {
  it('admits a call only when every key is admitted, and releases what the others reserved when one is refused', () => {
    const { gate, log } = recordingGate()
    const a = everyCredential(gate).admit(ctxWith(['real', 'decoy-1', 'blocked-key']))
    expect(a.refuse?.status).toBe(429)
    expect(log).toEqual(['admit real', 'admit decoy-1', 'admit blocked-key', 'settle real 0', 'settle decoy-1 0'])
  })

  it('settles the billed key with the real cost, last, and the others with 0 (they only free what they reserved); sends every warning', () => {
    const { gate, log } = recordingGate()
    const a = everyCredential(gate).admit(ctxWith(['real', 'other', 'third']))
    expect(a.refuse).toBeUndefined()
    expect(a.headers).toEqual({ 'x-burnrate-budget-warning': 'real, other, third' })
    a.settle?.(0.25)
    // The billed key last: the engine learns a call's cost from the settlement it saw last.
    expect(log.slice(3)).toEqual(['settle third 0', 'settle other 0', 'settle real 0.25'])
  })

  it('one key: the inner gate alone, the context untouched', () => {
    const { gate, log } = recordingGate()
    const ctx = ctxWith(['blocked-only'])
    expect(everyCredential(gate).admit(ctx).refuse).toBeDefined()
    expect(log).toEqual(['admit blocked-only'])
  })
})

describe('everyCredential with a check the gate leaves for after the dispatch (lateHeaders, afterSend)', () => {
  /** Key "a": a budget warning and a late runaway warning; "b": a late one only; "c": a budget warning only; "blocked...": refused. */
  function lateGate() {
    const log: string[] = []
    const late = (k: string): Pick<Admission, 'lateHeaders' | 'afterSend'> => ({
      lateHeaders: () => {
        log.push(`late ${k}`)
        return { 'x-burnrate-runaway-warning': `loop ${k}` }
      },
      afterSend: () => log.push(`afterSend ${k}`),
    })
    const gate: CallGate = {
      admit(ctx): Admission {
        const k = ctx.apiKey
        if (k.startsWith('blocked')) return { refuse: { status: 429, headers: {}, body: null, reason: 'budget_exceeded' } }
        if (k === 'b') return late(k)
        if (k === 'c') return { headers: { 'x-burnrate-budget-warning': k } }
        return { headers: { 'x-burnrate-budget-warning': k }, ...late(k) }
      },
    }
    return { gate, log }
  }

  it('merges every key’s headers when they are asked for, in the order an eager merge gives them', () => {
    const { gate, log } = lateGate()
    const a = everyCredential(gate).admit(ctxWith(['b', 'a', 'c']))
    expect(a.headers).toBeUndefined()
    expect(log).toEqual([])
    a.afterSend?.()
    expect(log).toEqual(['afterSend b', 'afterSend a'])
    const h = a.lateHeaders?.()
    // "b" has only the late header, so it comes first, as it did when every header was known at admission.
    expect(Object.entries(h ?? {})).toEqual([
      ['x-burnrate-runaway-warning', 'loop b, loop a'],
      ['x-burnrate-budget-warning', 'a, c'],
    ])
  })

  it('keys admitted before one that is refused still get their check run (afterSend), and are released', () => {
    const { gate, log } = lateGate()
    const a = everyCredential(gate).admit(ctxWith(['a', 'b', 'blocked-x']))
    expect(a.refuse?.status).toBe(429)
    expect(log).toEqual(['afterSend a', 'afterSend b'])
  })

  it('without anything late, headers are merged at admission as before', () => {
    const { gate } = lateGate()
    const a = everyCredential(gate).admit(ctxWith(['c', 'c']))
    expect(a.lateHeaders).toBeUndefined()
    expect(a.headers).toEqual({ 'x-burnrate-budget-warning': 'c, c' })
  })
})
