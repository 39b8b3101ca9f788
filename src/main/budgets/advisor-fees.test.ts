import { beforeAll, describe, expect, it } from 'vitest'
import { emptyUsage, type Usage } from '../metering/usage'
import { usageExtra } from '../metering/usage-extra'
import { loadPriceLibrary } from '../pricing/library'
import { Pricer } from '../pricing/price'
import { anthropic } from '../providers/anthropic'
import type { CallContext } from '../proxy/gate'
import { chargesBeyondTokens, ownTokens } from './call-fees'
import { CallHistory, expectedUsd } from './expected'
import type { ToolKind } from './tool-kinds'
import type { LearntUsage } from './types'

/**
 * Claude's advisor tool: a Sonnet 4.6 call whose counts hold an Opus 4.6 consultation (`Usage.advisor`)
 * is learnt as its own tokens plus a charge beyond them, the advice at Opus's rates. Sonnet $3 / $15,
 * Opus $5 / $25 per million input / output tokens.
 */

beforeAll(async () => {
  await loadPriceLibrary()
})

const pricer = new Pricer([])
const TS = Date.parse('2026-03-01T12:00:00Z')
const EXECUTOR = 'claude-sonnet-4-6'
const ADVISOR = 'claude-opus-4-6'

/** 4,000 input (1,000 of them cache reads) and 300 output tokens of Sonnet's, 2,100 and 1,600 of Opus's. */
function advised(): Usage {
  const part = { input_tokens: 2_100, output_tokens: 1_600, cache_read_tokens: 0, cache_write_tokens: 0, cache_write_1h_tokens: 0 }
  return { ...emptyUsage(), input_tokens: 6_100, output_tokens: 1_900, cache_read_tokens: 1_000, advisor: { [ADVISOR]: part } }
}

function recorded(u: Usage): LearntUsage {
  const p = pricer.price('anthropic', 'anthropic', EXECUTOR, u, new Date(TS))
  return { ts: TS, model: EXECUTOR, priced: p.priced, cost_usd: p.cost_usd, ...u, usage_extra: usageExtra(u) }
}

function ctx(tools: unknown[]): CallContext {
  return {
    provider: anthropic,
    shape: { endpoint: 'messages', model: EXECUTOR, stream: false, billable: true },
    apiKey: 'sk-x', apiKeyHash: 'h', keyHint: '…', tenant: '', agent: '', session: '',
    ts: TS, body: { model: EXECUTOR, max_tokens: 4000, tools }, bodyBytes: 3000,
  }
}

const ADVISOR_TOOL = { type: 'advisor_20260301', name: 'advisor', model: ADVISOR }
const SEARCH_TOOL = { type: 'web_search_20250305', name: 'web_search' }

function learnt(fees: number, tools: ToolKind): CallHistory {
  const h = new CallHistory()
  for (let i = 0; i < 5; i++) h.learn('anthropic', EXECUTOR, 300, 1e-9, fees, undefined, false, tools)
  return h
}

describe("the advisor's charge, as expected reservations learn it", () => {
  it("is beyond the call's own tokens: the advice at Opus's rates; the own tokens are Sonnet's alone", () => {
    const call = recorded(advised())
    expect(call.cost_usd).toBeCloseTo((3_000 * 3 + 1_000 * 0.3 + 300 * 15 + 2_100 * 5 + 1_600 * 25) / 1e6, 12)
    expect(chargesBeyondTokens(pricer, 'anthropic', 'anthropic', call)).toBeCloseTo((2_100 * 5 + 1_600 * 25) / 1e6, 12)
    expect(ownTokens(call)).toMatchObject({ input_tokens: 4_000, output_tokens: 300, cache_read_tokens: 1_000, cost_usd: call.cost_usd })
  })

  it('a call with no advice is its own tokens, the same object (nothing read)', () => {
    const call = recorded({ ...emptyUsage(), input_tokens: 4_000, output_tokens: 300, web_searches: 1 })
    expect(ownTokens(call)).toBe(call)
  })

  it('is reserved for requests naming the advisor tool only: not for a searching call, nor the searches for an advised one', () => {
    const advisedCall = ctx([ADVISOR_TOOL, SEARCH_TOOL, { name: 'Read', input_schema: {} }])
    const searching = ctx([SEARCH_TOOL])
    const base = (c: CallContext) => expectedUsd(pricer, learnt(0, 'none'), c)
    expect(expectedUsd(pricer, learnt(0.05, 'advisor'), advisedCall)).toBeCloseTo(base(advisedCall) + 0.05, 15)
    expect(expectedUsd(pricer, learnt(0.05, 'advisor'), searching)).toBe(base(searching))
    expect(expectedUsd(pricer, learnt(0.01, 'billed'), advisedCall)).toBe(base(advisedCall))
    expect(expectedUsd(pricer, learnt(0.01, 'billed'), searching)).toBeCloseTo(base(searching) + 0.01, 15)
  })
})
