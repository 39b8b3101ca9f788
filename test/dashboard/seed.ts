import { createHash } from 'node:crypto'
import type { CallRecord } from '../../src/main/ledger/record'
import { request, type Reply } from '../support/http'

/** A recorded call with sensible defaults; tests override what they look at. */
export function makeCall(over: Partial<CallRecord> = {}): CallRecord {
  return {
    ts: Date.now(),
    provider: 'openai',
    model: 'gpt-4o-mini',
    endpoint: '/v1/chat/completions',
    api_key_hash: keyHash('sk-test-key-000000'),
    key_hint: 'sk-…0000',
    tenant: '',
    agent: '',
    session: '',
    status: 200,
    streamed: false,
    input_tokens: 100,
    output_tokens: 50,
    cache_read_tokens: 0,
    cache_write_tokens: 0,
    cache_write_1h_tokens: 0,
    reasoning_tokens: 0,
    cost_usd: 0.001,
    priced: true,
    estimated: false,
    latency_ms: 120,
    error: null,
    ...over,
  }
}

export function keyHash(key: string): string {
  return createHash('sha256').update(key).digest('hex')
}

/** A small deterministic PRNG (mulberry32), so failures reproduce. */
export function rng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const RANGE_LENGTHS = [30 * 60_000, 3_600_000, 6 * 3_600_000, 86_400_000, 7 * 86_400_000, 30 * 86_400_000]

/**
 * `n` varied calls over the last `days` days, none within 20 s of a range's edge (so a test's
 * "now" and the server's "now" a few ms apart put every call on the same side of it).
 */
export function variedCalls(n: number, now: number, days: number, seed = 1): CallRecord[] {
  const r = rng(seed)
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)]
  const models = [
    ['openai', 'gpt-4o-mini'],
    ['openai', 'gpt-5'],
    ['anthropic', 'claude-sonnet-4-5'],
    ['anthropic', 'claude-3-5-haiku'],
    ['google', 'gemini-2.5-pro'],
  ] as const
  const out: CallRecord[] = []
  while (out.length < n) {
    const ago = 20_000 + Math.floor(r() * days * 86_400_000)
    if (RANGE_LENGTHS.some((l) => Math.abs(ago - l) < 20_000)) continue
    const [provider, model] = pick(models)
    const tenant = pick(['', 'acme', 'globex'])
    const agent = pick(['', 'claude-code', 'codex', 'aider'])
    const status = pick([200, 200, 200, 200, 200, 200, 429, 500, 502, 499, 400])
    const input = Math.floor(r() * 5000)
    const key = pick(['sk-alpha-000000001', 'sk-beta-0000000002', 'sk-gamma-000000003'])
    out.push(
      makeCall({
        ts: now - ago,
        provider,
        model,
        tenant,
        agent,
        session: r() < 0.7 ? `s-${agent}-${Math.floor(r() * 40)}` : '',
        project: agent ? `/home/dev/${tenant || 'solo'}-${provider}` : '',
        // (As on a team server; derived, so the random draws stay what they were.)
        member: agent === 'codex' ? 'alice' : agent === 'aider' ? 'bob' : '',
        api_key_hash: keyHash(key),
        key_hint: key.slice(0, 3) + '…' + key.slice(-4),
        status,
        input_tokens: input,
        cache_read_tokens: Math.floor(input * r() * 0.5),
        cache_write_tokens: Math.floor(input * r() * 0.2),
        output_tokens: Math.floor(r() * 2000),
        cost_usd: status === 200 ? r() * 0.05 : 0,
        latency_ms: 5 + r() * 30_000,
      }),
    )
  }
  return out
}

export async function getJson(url: string): Promise<{ status: number; body: any; reply: Reply }> {
  const reply = await request(url)
  return { status: reply.status, body: reply.json(), reply }
}
