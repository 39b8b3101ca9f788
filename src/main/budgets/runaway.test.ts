import { describe, expect, it, vi } from 'vitest'
import type { CallRecord } from '../ledger/record'
import { anthropic } from '../providers/anthropic'
import type { CallContext } from '../proxy/gate'
import { BudgetEngine } from './engine'
import { budgetGate } from './gate'
import { type DeferredCheck, type RunawayAction, RunawayDetector, type RunawayEvent, type RunawayOptions } from './runaway'
import { tailHash } from './conversation-tail'

const msg = (role: string, text: string) => ({ role, content: text })

function ctx(session: string, body: unknown = {}): CallContext {
  return {
    provider: anthropic,
    shape: { endpoint: 'messages', model: 'claude-sonnet-4-5', stream: true, billable: true },
    apiKey: 'sk-ant-x', apiKeyHash: 'h'.repeat(64), keyHint: 'sk-…', tenant: '', agent: 'claude-code', session,
    ts: Date.now(), body, bodyBytes: 10,
  }
}

describe('tailHash', () => {
  it('is the same for a growing conversation that ends the same way, different when the end changes, none for one-shot calls', () => {
    const a = { messages: [msg('user', 'task'), msg('assistant', 'run x'), msg('user', 'error')] }
    const b = { messages: [msg('user', 'task'), msg('assistant', 'run x'), msg('user', 'error'), msg('assistant', 'run x'), msg('user', 'error')] }
    const c = { messages: [...b.messages, msg('assistant', 'run y'), msg('user', 'ok')] }
    expect(tailHash(a)).toBe(tailHash(b))
    expect(tailHash(c)).not.toBe(tailHash(b))
    expect(tailHash({ messages: [msg('user', 'hi')] })).toBeNull()
    expect(tailHash({ contents: a.messages })).toBe(tailHash(a))
    // Gemini Code Assist wraps Gemini's request (Gemini CLI logged in with Google).
    expect(tailHash({ model: 'gemini-2.5-pro', project: 'p', request: { contents: b.messages, session_id: 's' } })).toBe(tailHash(a))
    expect(tailHash({ model: 'gemini-2.5-pro', request: { contents: [msg('user', 'hi')] } })).toBeNull()
  })
})

describe('tailHash leaves out the ids of tool calls (fresh for every call, even in a loop)', () => {
  const tail = (a: unknown, b: unknown) => ({ messages: [msg('user', 'task'), a, b] })
  const claude = (id: string, command = 'npm test') => tail(
    { role: 'assistant', content: [{ type: 'text', text: 'again' }, { type: 'tool_use', id, name: 'Bash', input: { command } }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: id, content: 'Error: Cannot find module' }] },
  )
  const chat = (id: string, args = '{"command":"npm test"}') => tail(
    { role: 'assistant', content: null, tool_calls: [{ id, type: 'function', function: { name: 'shell', arguments: args } }] },
    { role: 'tool', tool_call_id: id, content: 'Error: Cannot find module' },
  )
  const responses = (id: string, args = '{"command":["npm","test"]}') => ({
    input: [msg('user', 'task'), { type: 'function_call', id: `fc_${id}`, call_id: `call_${id}`, name: 'shell', arguments: args }, { type: 'function_call_output', call_id: `call_${id}`, output: 'Error' }],
  })
  const gemini = (id: string, command = 'npm test') => ({
    contents: [
      { role: 'user', parts: [{ text: 'task' }] },
      { role: 'model', parts: [{ functionCall: { id, name: 'run_shell_command', args: { command } } }] },
      { role: 'user', parts: [{ functionResponse: { id, name: 'run_shell_command', response: { output: 'Error' } } }] },
    ],
  })

  it('the same call and result with new ids hash the same; another call does not', () => {
    expect(tailHash(claude('toolu_01A'))).toBe(tailHash(claude('toolu_01B')))
    expect(tailHash(claude('toolu_01A'))).not.toBe(tailHash(claude('toolu_01A', 'npm run build')))
    expect(tailHash(chat('call_A'))).toBe(tailHash(chat('call_B')))
    expect(tailHash(chat('call_A'))).not.toBe(tailHash(chat('call_A', '{"command":"ls"}')))
    expect(tailHash(responses('A'))).toBe(tailHash(responses('B')))
    expect(tailHash(responses('A'))).not.toBe(tailHash(responses('A', '{"command":["ls"]}')))
    expect(tailHash(gemini('g-1'))).toBe(tailHash(gemini('g-2')))
    expect(tailHash(gemini('g-1'))).not.toBe(tailHash(gemini('g-1', 'ls')))
    // An `id` a tool is given as input is what the call does: it stays.
    const issue = (id: number) => tail({ role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_X', name: 'get_issue', input: { id } }] }, msg('user', 'not found'))
    expect(tailHash(issue(1))).not.toBe(tailHash(issue(2)))
  })

  it('leaves the body as it was', () => {
    const b = claude('toolu_01A')
    const before = JSON.stringify(b)
    tailHash(b)
    expect(JSON.stringify(b)).toBe(before)
  })
})

describe('tailHash of big tails (long strings hashed as they are, not as JSON text)', () => {
  const tail = (a: unknown, b: unknown) => ({ messages: [msg('user', 'task'), a, b] })
  /** The rule: two tails hash the same exactly when their JSON texts are the same. */
  function sameAsJson(x: { messages: unknown[] }, y: { messages: unknown[] }): void {
    const json = JSON.stringify(x.messages.slice(-2)) === JSON.stringify(y.messages.slice(-2))
    expect(tailHash(x) === tailHash(y), `${JSON.stringify(x).slice(-80)} / ${JSON.stringify(y).slice(-80)}`).toBe(json)
  }
  const big = 'line "1"\n\ttab é € 😀\n'.repeat(400)

  it('is the same for equal tails and different otherwise, wherever the difference is', () => {
    const result = (text: string) => ({ role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: text }] })
    const call = { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'Bash', input: { command: 'cat x' } }] }
    sameAsJson(tail(call, result(big)), tail(structuredClone(call), result(`${big}`)))
    sameAsJson(tail(call, result(big)), tail(call, result(`${big}.`)))
    sameAsJson(tail(call, result(big)), tail(call, result(`x${big.slice(1)}`)))
    // Where one string ends and the next starts; text that looks like the written form.
    sameAsJson(tail('a'.repeat(5000) + 'b', 'c'), tail('a'.repeat(5000), 'bc'))
    sameAsJson(tail(`#4:abcd${big}`, 'x'), tail(`#4:abcd${big}`, 'x'))
    sameAsJson(tail(big, `#${big.length}:${big}`), tail(`${big}"#${big.length}:`, big))
    sameAsJson(tail([big, big], 1), tail([`${big}${big}`], 1))
    sameAsJson(tail({ a: big }, 1), tail({ a: big, b: undefined }, 1))
    // Key order counts, as in the JSON text; -0 is 0 there.
    sameAsJson(tail({ a: big, b: 1 }, 1), tail({ b: 1, a: big }, 1))
    sameAsJson(tail({ n: -0, s: big }, 1), tail({ n: 0, s: big }, 1))
    // Strings UTF-8 cannot carry (lone surrogates) are told apart, and from U+FFFD.
    const lone = 'a'.repeat(5000)
    sameAsJson(tail(`${lone}\ud800`, 1), tail(`${lone}\ud801`, 1))
    sameAsJson(tail(`${lone}\ud800`, 1), tail(`${lone}\ufffd`, 1))
    sameAsJson(tail(`${lone}\ud800`, 1), tail(`${lone}\ud800`, 1))
    // A long string after many small parts, and tails nested deeper than the walk goes.
    const parts = (last: string) => Array.from({ length: 400 }, (_, i) => ({ type: 'text', text: i === 399 ? last : `p${i}` }))
    sameAsJson(tail('x', parts(big)), tail('x', parts(big)))
    sameAsJson(tail('x', parts(big)), tail('x', parts(`${big}!`)))
    let deepA: unknown = big
    let deepB: unknown = `${big}!`
    let deepC: unknown = big
    for (let i = 0; i < 300; i++) {
      deepA = [deepA]
      deepB = [deepB]
      deepC = [deepC]
    }
    sameAsJson(tail(1, deepA), tail(1, deepB))
    sameAsJson(tail(1, deepA), tail(1, deepC))
  })

  it('random tails: the same hash exactly when the same JSON text', () => {
    let seed = 7
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648
      return seed % n
    }
    const pieces = ['a', '"', '\\', '\n', 'é', '😀', '#', ':', '1', '\ud800', ' ']
    const str = (): string => {
      const long = rnd(3) === 0
      let s = ''
      const n = long ? 4090 + rnd(12) : rnd(6)
      while (s.length < n) s += pieces[rnd(pieces.length)]
      return s
    }
    const value = (d: number): unknown => {
      const k = d > 3 ? rnd(3) : rnd(6)
      if (k === 0) return str()
      if (k === 1) return rnd(4) - 1
      if (k === 2) return [null, true, false][rnd(3)]
      if (k === 3) return Array.from({ length: rnd(3) }, () => value(d + 1))
      const o: Record<string, unknown> = {}
      for (let i = rnd(3); i > 0; i--) o[['a', 'b', 'c'][rnd(3)]] = value(d + 1)
      return o
    }
    const mutate = (v: unknown): unknown => {
      if (typeof v === 'string') return rnd(2) ? `${v}a` : v.slice(0, -1)
      if (Array.isArray(v) && v.length) {
        const i = rnd(v.length)
        return v.map((x, j) => (j === i ? mutate(x) : x))
      }
      if (v && typeof v === 'object' && Object.keys(v).length) {
        const k = Object.keys(v)[rnd(Object.keys(v).length)]
        return { ...(v as object), [k]: mutate((v as Record<string, unknown>)[k]) }
      }
      return rnd(2) ? [v] : 'x'
    }
    for (let i = 0; i < 300; i++) {
      const a = value(0)
      const b = value(0)
      const x = tail(a, b)
      sameAsJson(x, tail(JSON.parse(JSON.stringify(a)), JSON.parse(JSON.stringify(b))))
      sameAsJson(x, tail(a, mutate(b)))
      sameAsJson(x, tail(mutate(a), b))
      sameAsJson(x, tail(b, a))
    }
  })

  it('throws where the JSON text could not be made (as before: nested deeper than JSON.stringify goes)', () => {
    let deep: unknown = 'x'.repeat(5000)
    for (let i = 0; i < 20_000; i++) deep = [deep]
    expect(() => JSON.stringify(deep)).toThrow(RangeError)
    expect(() => tailHash(tail(1, deep))).toThrow(RangeError)
  })
})

describe('loop turns', () => {
  const opts: RunawayOptions = { loop: { action: 'block', repeats: 3, windowMinutes: 10 }, spendRate: { action: 'off', usdPerMinute: null } }
  const stuck = (n: number) => ({ messages: [msg('user', 'task'), ...Array.from({ length: n }, () => [msg('assistant', 'run x'), msg('user', 'error')]).flat()] })

  it('a resend of the same request (the conversation has not grown) is not a turn; a loop already found still is one', () => {
    const d = new RunawayDetector(opts)
    const t0 = Date.now()
    // An SDK retrying one request through an outage: counted once.
    for (let i = 0; i < 10; i++) expect(d.check(ctx('s', stuck(1)), t0 + i)).toEqual([])
    expect(d.check(ctx('s', stuck(2)), t0 + 20)).toEqual([])
    expect(d.check(ctx('s', stuck(3)), t0 + 30)).toMatchObject([{ kind: 'loop', action: 'block', count: 3 }])
    // Sending the refused call again does not get it through, nor count it again.
    expect(d.check(ctx('s', stuck(3)), t0 + 40)).toMatchObject([{ kind: 'loop', count: 3 }])
    expect(d.check(ctx('s', stuck(4)), t0 + 50)).toMatchObject([{ kind: 'loop', count: 4 }])
  })
})

describe('session spend rate', () => {
  it('block: a session over usd_per_minute gets a transient 429 rate_limited for a minute', () => {
    const detector = new RunawayDetector({ loop: { action: 'off', repeats: 5, windowMinutes: 10 }, spendRate: { action: 'block', usdPerMinute: 1 } })
    const engine = new BudgetEngine('UTC', 1, [], [], { worstCase: () => 0, expected: () => 0, learn: () => {} })
    const gate = budgetGate(engine, { detector, windowMinutes: 10, usdPerMinute: 1 })
    const now = Date.now()
    expect(gate.admit(ctx('s1')).refuse).toBeUndefined()
    detector.observe({ session: 's1', api_key_hash: 'h'.repeat(64), cost_usd: 1.2 } as CallRecord, now)
    const r = gate.admit(ctx('s1')).refuse
    expect(r).toMatchObject({ status: 429, reason: 'rate_limited', headers: { 'x-should-retry': 'true', 'retry-after': '60' } })
    expect(r?.body).toMatchObject({ error: { type: 'rate_limited', unit: 'session_usd_per_minute', session: 's1', limit: 1 } })
    expect(gate.admit(ctx('s2')).refuse).toBeUndefined()
    expect(detector.check(ctx('s1'), now + 61_000)).toEqual([])
  })

  it('keeps the costs of the last minute only, and none when its action is off', () => {
    const spendOf = (d: RunawayDetector) => (d as unknown as { sessions: Map<string, { spend: unknown[] }> }).sessions.get(`${'h'.repeat(64)}\nlong`)?.spend ?? []
    const t0 = 1_700_000_000_000
    const off = new RunawayDetector({ loop: { action: 'warn', repeats: 5, windowMinutes: 10 }, spendRate: { action: 'off', usdPerMinute: 1 } })
    const on = new RunawayDetector({ loop: { action: 'off', repeats: 5, windowMinutes: 10 }, spendRate: { action: 'warn', usdPerMinute: 1 } })
    // A long working session, a call every 2 s for 2 hours; the first detector checks every call (its loop action is on), the second never does.
    for (let i = 0; i < 3600; i++) {
      const now = t0 + i * 2000
      off.check(ctx('long', { messages: [msg('user', 'task'), msg('assistant', `step ${i}`), msg('user', `result ${i}`)] }), now)
      for (const d of [off, on]) d.observe({ session: 'long', api_key_hash: 'h'.repeat(64), cost_usd: 0.01 } as CallRecord, now)
    }
    expect(spendOf(off)).toHaveLength(0)
    expect(spendOf(on)).toHaveLength(30)
    expect(on.check(ctx('long'), t0 + 3599 * 2000)).toEqual([]) // $0.30 in the last minute, under $1
  })

  it("counts money only: a plan's (subscription) calls are no spend", () => {
    const detector = new RunawayDetector({ loop: { action: 'off', repeats: 5, windowMinutes: 10 }, spendRate: { action: 'block', usdPerMinute: 1 } })
    const now = Date.now()
    detector.observe({ session: 's1', api_key_hash: 'h'.repeat(64), cost_usd: 5, billing: 'subscription' } as CallRecord, now)
    expect(detector.check(ctx('s1'), now)).toEqual([])
    detector.observe({ session: 's1', api_key_hash: 'h'.repeat(64), cost_usd: 5, billing: 'api' } as CallRecord, now)
    expect(detector.check(ctx('s1'), now)).toMatchObject([{ kind: 'spend_rate', usd_last_minute: 5 }])
  })

  it('a call it refuses is not a loop turn', () => {
    const detector = new RunawayDetector({ loop: { action: 'warn', repeats: 2, windowMinutes: 10 }, spendRate: { action: 'block', usdPerMinute: 1 } })
    const engine = new BudgetEngine('UTC', 1, [], [], { worstCase: () => 0, expected: () => 0, learn: () => {} })
    const gate = budgetGate(engine, { detector, windowMinutes: 10, usdPerMinute: 1 })
    const stuck = (n: number) => ({ messages: [msg('user', 'task'), ...Array.from({ length: n }, () => [msg('assistant', 'run x'), msg('user', 'error')]).flat()] })
    const now = Date.now()
    expect(gate.admit(ctx('s1', stuck(1))).refuse).toBeUndefined()
    detector.observe({ session: 's1', api_key_hash: 'h'.repeat(64), cost_usd: 1.2 } as CallRecord, now)
    expect(gate.admit(ctx('s1', stuck(2))).refuse).toMatchObject({ reason: 'rate_limited' })
    expect(gate.admit(ctx('s1', stuck(3))).refuse).toMatchObject({ reason: 'rate_limited' })
    // A minute later: the tail's second turn, not its fourth.
    expect(detector.check(ctx('s1', stuck(4)), now + 61_000)).toMatchObject([{ kind: 'loop', count: 2 }])
  })
})

describe('deferred checks (a check that cannot refuse runs after the dispatch)', () => {
  const warnLoop = (spendRate: RunawayOptions['spendRate'] = { action: 'off', usdPerMinute: null }): RunawayOptions => ({
    loop: { action: 'warn', repeats: 3, windowMinutes: 10 },
    spendRate,
  })
  const stuck = (n: number) => ({ messages: [msg('user', 'task'), ...Array.from({ length: n }, () => [msg('assistant', 'run x'), msg('user', 'error')]).flat()] })
  const cost = (session: string, usd: number) => ({ session, api_key_hash: 'h'.repeat(64), cost_usd: usd }) as CallRecord
  const nextImmediate = () => new Promise<void>((r) => setImmediate(r))

  it('is deferrable only when no action can refuse a call', () => {
    const d = (loop: RunawayAction, rate: RunawayAction, usd: number | null) =>
      new RunawayDetector({ loop: { action: loop, repeats: 3, windowMinutes: 10 }, spendRate: { action: rate, usdPerMinute: usd } }).deferrable
    expect(d('warn', 'warn', 1)).toBe(true)
    expect(d('off', 'warn', 1)).toBe(true)
    expect(d('warn', 'block', null)).toBe(true) // a spend rate without a limit never trips
    expect(d('block', 'warn', 1)).toBe(false)
    expect(d('warn', 'block', 1)).toBe(false)
    expect(d('off', 'block', 1)).toBe(false)
  })

  it('counts, events and announcements are those of checks at arrival: in arrival order, each once, observe() and events() run the waiting ones first', async () => {
    const opts = warnLoop({ action: 'warn', usdPerMinute: 1 })
    const sync = new RunawayDetector(opts)
    const late = new RunawayDetector(opts)
    const heardSync: RunawayEvent[] = []
    const heardLate: RunawayEvent[] = []
    sync.onEvent((e) => heardSync.push(e))
    late.onEvent((e) => heardLate.push(e))
    const t0 = Date.now()
    // Two sessions interleaved, costs recorded in between (the spend rate reads them), all in one millisecond.
    const steps: ({ call: string; n: number } | { cost: string; usd: number })[] = [
      { call: 'a', n: 1 }, { call: 'b', n: 1 }, { cost: 'a', usd: 0.7 }, { call: 'a', n: 2 }, { cost: 'a', usd: 0.7 },
      { call: 'a', n: 3 }, { call: 'b', n: 2 }, { call: 'b', n: 3 }, { call: 'a', n: 4 }, { cost: 'b', usd: 2 }, { call: 'b', n: 4 },
    ]
    const expected: RunawayEvent[][] = []
    const handles: DeferredCheck[] = []
    for (const s of steps) {
      if ('call' in s) {
        expected.push(sync.check(ctx(s.call, stuck(s.n)), t0))
        handles.push(late.defer(ctx(s.call, stuck(s.n)), t0))
      } else {
        sync.observe(cost(s.cost, s.usd), t0)
        late.observe(cost(s.cost, s.usd), t0)
      }
    }
    // The 5th call's answer is wanted before the immediates: it runs then, after the ones before it.
    expect(handles[4].events()).toEqual(expected[4])
    for (const h of handles) h.soon()
    await nextImmediate()
    // The immediates ran the rest: every announcement made, before any handle was read again.
    expect(heardLate).toEqual(heardSync)
    expect(handles.map((h) => h.events())).toEqual(expected)
    expect(expected.flat().map((e) => `${e.kind} ${e.session} ${e.count}`)).toEqual(
      expect.arrayContaining(['loop a 3', 'loop a 4', 'loop b 3', 'loop b 4', 'spend_rate a 0', 'spend_rate b 0']),
    )
    expect(heardLate).toEqual(heardSync)
    expect(late.events()).toEqual(sync.events())
  })

  it('a check asked for before its immediate runs then, exactly once; the immediate runs only the rest', async () => {
    const d = new RunawayDetector(warnLoop())
    const heard: RunawayEvent[] = []
    d.onEvent((e) => heard.push(e))
    const t0 = Date.now()
    const evaluate = vi.spyOn(d as unknown as { evaluate: () => RunawayEvent[] }, 'evaluate')
    const h = [1, 2, 3, 4].map((n) => d.defer(ctx('s', stuck(n)), t0))
    expect(heard).toEqual([])
    expect(evaluate).toHaveBeenCalledTimes(0)
    expect(h[2].events()).toMatchObject([{ kind: 'loop', count: 3 }])
    expect(h[2].events()).toMatchObject([{ kind: 'loop', count: 3 }])
    expect(evaluate).toHaveBeenCalledTimes(3)
    expect(heard).toHaveLength(1)
    for (const x of h) x.soon()
    h[3].soon()
    await nextImmediate()
    expect(evaluate).toHaveBeenCalledTimes(4)
    expect(h[3].events()).toMatchObject([{ kind: 'loop', count: 4 }])
    expect(h[0].events()).toEqual([])
    expect(evaluate).toHaveBeenCalledTimes(4)
    expect(heard).toHaveLength(1) // announced once per window
    expect(d.check(ctx('s', stuck(5)), t0)).toMatchObject([{ kind: 'loop', count: 5 }])
  })

  it('many checks waiting while more arrive: each still runs once, in order (the waiting list is compacted as it goes)', async () => {
    const d = new RunawayDetector({ ...warnLoop(), loop: { action: 'warn', repeats: 1, windowMinutes: 10 } })
    const t0 = Date.now()
    const h: DeferredCheck[] = []
    const counts: number[] = []
    // Each session's conversation alternates between two lengths with the same tail: every call is a turn, none a resend.
    const sent = new Map<string, number>()
    const next = (s: string) => {
      sent.set(s, (sent.get(s) ?? 0) + 1)
      return stuck(2 + (sent.get(s)! % 2))
    }
    for (let round = 0; round < 6; round++) {
      for (let i = 0; i < 1000; i++) h.push(d.defer(ctx(`s${i % 7}`, next(`s${i % 7}`)), t0))
      // Part of them is asked for while the rest wait.
      counts.push(h[h.length - 400].events()[0].count)
    }
    for (const x of h) x.soon()
    await nextImmediate()
    const perSession = new Map<string, number>()
    const expected = h.map((_, i) => {
      const s = `s${(i % 1000) % 7}`
      perSession.set(s, (perSession.get(s) ?? 0) + 1)
      return perSession.get(s)
    })
    expect(h.map((x) => x.events()[0].count)).toEqual(expected)
    expect(counts).toEqual([0, 1, 2, 3, 4, 5].map((r) => expected[r * 1000 + 600]))
  })

  it('a tail too deep for JSON.stringify trips nothing when deferred (the call is already upstream); the checks after it still run', async () => {
    const d = new RunawayDetector(warnLoop())
    let deep: unknown = []
    for (let i = 0; i < 20_000; i++) deep = [deep]
    const t0 = Date.now()
    const bad = d.defer(ctx('s', { messages: [1, deep, deep] }), t0)
    const h = [1, 2, 3].map((n) => d.defer(ctx('s', stuck(n)), t0))
    bad.soon()
    for (const x of h) x.soon()
    await nextImmediate()
    expect(bad.events()).toEqual([])
    expect(h[2].events()).toMatchObject([{ kind: 'loop', count: 3 }])
  })

  it('budgetGate: warn admits with lateHeaders (the check waits for them or the immediate); block decides in admit', async () => {
    const engine = () => new BudgetEngine('UTC', 1, [], [], { worstCase: () => 0, expected: () => 0, learn: () => {} })
    const detector = new RunawayDetector(warnLoop())
    const gate = budgetGate(engine(), { detector, windowMinutes: 10, usdPerMinute: null })
    const a = [1, 2, 3].map((n) => gate.admit(ctx('s', stuck(n))))
    expect(a.map((x) => x.headers)).toEqual([undefined, undefined, undefined])
    expect(a.map((x) => typeof x.afterSend)).toEqual(['function', 'function', 'function'])
    expect(a[2].lateHeaders?.()).toEqual({ 'x-burnrate-runaway-warning': 'loop: the same request tail 3 times in session s' })
    expect(a[0].lateHeaders?.()).toBeUndefined()
    // A plan's (subscription) calls: no money decision, the same late warning.
    const sub = (n: number) => ({ ...ctx('p', stuck(n)), billing: 'subscription' as const })
    const p = [1, 2, 3].map((n) => gate.admit(sub(n)))
    expect(p.map((x) => [x.headers, x.settle, typeof x.afterSend])).toEqual(Array(3).fill([undefined, undefined, 'function']))
    expect(p[2].lateHeaders?.()).toEqual({ 'x-burnrate-runaway-warning': 'loop: the same request tail 3 times in session p' })
    const blocking = new RunawayDetector({ ...warnLoop(), loop: { action: 'block', repeats: 3, windowMinutes: 10 } })
    const bgate = budgetGate(engine(), { detector: blocking, windowMinutes: 10, usdPerMinute: null })
    const b = [1, 2, 3].map((n) => bgate.admit(ctx('s', stuck(n))))
    expect(b.map((x) => !!x.lateHeaders)).toEqual([false, false, false])
    expect(b[2].refuse).toMatchObject({ status: 429, reason: 'loop_detected' })
  })
})
