import { describe, expect, it } from 'vitest'
import { keyIdentity } from './attribution'
import { type Admission, type CallContext, type CallGate, decided, everyCredential } from './gate'

function ctxWith(keys: string[]): CallContext {
  const billed = keyIdentity(keys[0] ?? '')
  return { ...billed, credentials: keys.length > 1 ? keys.map(keyIdentity) : undefined } as unknown as CallContext
}

/** A gate whose keys starting with "db" wait on a (simulated) database answer, as shared budget state does. */
function pendingGate() {
  const log: string[] = []
  const gate: CallGate = {
    admit(ctx): Admission {
      log.push(`admit ${ctx.apiKey}`)
      const a: Admission = ctx.apiKey.includes('blocked')
        ? { refuse: { status: 429, headers: {}, body: null, reason: 'budget_exceeded' } }
        : { headers: { 'x-burnrate-budget-warning': ctx.apiKey }, settle: (c) => void log.push(`settle ${ctx.apiKey} ${c}`) }
      return ctx.apiKey.startsWith('db') ? { pending: new Promise((r) => setImmediate(() => r(a))) } : a
    },
  }
  return { gate, log }
}

describe('everyCredential with decisions that wait on the database', () => {
  it('asks the keys after a pending one only once it is decided, and combines them', async () => {
    const { gate, log } = pendingGate()
    const a = everyCredential(gate).admit(ctxWith(['real', 'db-1', 'other']))
    expect(a.pending).toBeDefined()
    expect(log).toEqual(['admit real', 'admit db-1'])
    const x = await decided(a)
    expect(log).toEqual(['admit real', 'admit db-1', 'admit other'])
    expect(x.refuse).toBeUndefined()
    expect(x.headers).toEqual({ 'x-burnrate-budget-warning': 'real, db-1, other' })
    x.settle?.(0.5)
    // The cost is the billed key's alone, settled last; the others free what they reserved.
    expect(log.slice(3)).toEqual(['settle other 0', 'settle db-1 0', 'settle real 0.5'])
  })

  it('a pending key refused releases the keys admitted before it', async () => {
    const { gate, log } = pendingGate()
    const x = await decided(everyCredential(gate).admit(ctxWith(['real', 'db-blocked', 'other'])))
    expect(x.refuse?.status).toBe(429)
    expect(log).toEqual(['admit real', 'admit db-blocked', 'settle real 0'])
  })
})
