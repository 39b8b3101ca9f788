import type { CallRecord } from '../../src/main/ledger/record'
import { hashKey } from '../../src/main/proxy/attribution'
import { keyHint } from '../../src/shared/key-hint'
import { writeSpill } from '../../src/main/reliability/spill'
import { PeriodClock } from '../../src/main/time/zone'
import { NANO_FIXTURE, fixtureModel } from './support'

/**
 * A spill file in `dir` as an earlier run left it (calls a database could not take): one call
 * written by a release before `requested_model` existed (no such field) and one with it, each
 * $0.001 of `key` today (UTC), answered by the dated model of NANO_FIXTURE.
 */
export function spillWithRequestedModel(dir: string, key: string): void {
  const now = Date.now()
  const ts = Math.max(new PeriodClock('UTC').dayOf(now).start, now - 1000)
  const call = (i: number): CallRecord => ({
    ts: ts + i, provider: 'openai', model: fixtureModel(NANO_FIXTURE), endpoint: 'chat.completions', api_key_hash: hashKey(key),
    key_hint: keyHint(key), tenant: '', agent: '', session: '', status: 200, streamed: false, input_tokens: 10, output_tokens: 10,
    cache_read_tokens: 0, cache_write_tokens: 0, cache_write_1h_tokens: 0, reasoning_tokens: 0, cost_usd: 0.001, priced: true, estimated: false,
    latency_ms: 1, error: null, response_id: `chatcmpl-spill-${i}`,
  })
  writeSpill(dir, [call(0), { ...call(1), requested_model: 'gpt-5-nano' }])
}
