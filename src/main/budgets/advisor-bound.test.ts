import { beforeAll, describe, expect, it } from 'vitest'
import { loadPriceLibrary } from '../pricing/library'
import { Pricer } from '../pricing/price'
import { anthropic } from '../providers/anthropic'
import type { CallContext } from '../proxy/gate'
import { promptTokenBound, worstCaseUsd } from './worst-case'

/** Haiku 4.5 ($1 / $5 per million) advised by Opus 4.6 ($5 input, $6.25 5-minute cache writes, $25 output). */

beforeAll(async () => {
  await loadPriceLibrary()
})

const pricer = new Pricer([])
const EXECUTOR = 'claude-haiku-4-5-20251001'
const BYTES = 3000

function ctx(tools: unknown[]): CallContext {
  return {
    provider: anthropic,
    shape: { endpoint: 'messages', model: EXECUTOR, stream: false, billable: true },
    apiKey: 'sk-x', apiKeyHash: 'h', keyHint: '…', tenant: '', agent: '', session: '',
    ts: Date.parse('2026-03-01T12:00:00Z'), body: { model: EXECUTOR, max_tokens: 4000, tools }, bodyBytes: BYTES,
  }
}

const advisor = (over: Record<string, unknown> = {}) => ({ type: 'advisor_20260301', name: 'advisor', model: 'claude-opus-4-6', ...over })

describe('a worst case with the advisor tool', () => {
  const own = () => worstCaseUsd(pricer, ctx([]))
  const prompt = promptTokenBound(BYTES)

  it('adds each capped use: the transcript it may read and its output cap, at the advisor model', () => {
    expect(own()).toBeCloseTo((prompt * 1 + 4000 * 5) / 1e6, 15)
    const read = prompt + 4000 + 2 * 2048
    expect(worstCaseUsd(pricer, ctx([advisor({ max_uses: 2, max_tokens: 2048 })]))).toBeCloseTo(own() + (2 * read * 5 + 2 * 2048 * 25) / 1e6, 15)
    // The advisor's own prompt cache, when the tool asks for it: its reads may all be writes.
    expect(worstCaseUsd(pricer, ctx([advisor({ max_uses: 1, max_tokens: 2048, caching: { type: 'ephemeral' } })]))).toBeCloseTo(own() + ((prompt + 4000 + 2048) * 6.25 + 2048 * 25) / 1e6, 15)
  })

  it('adds nothing for a tool that leaves a cap out: how often it is consulted is not in the request', () => {
    expect(worstCaseUsd(pricer, ctx([advisor()]))).toBe(own())
    expect(worstCaseUsd(pricer, ctx([advisor({ max_uses: 3 })]))).toBe(own())
    expect(worstCaseUsd(pricer, ctx([advisor({ max_tokens: 2048 })]))).toBe(own())
  })
})
