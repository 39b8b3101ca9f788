import { createHash } from 'node:crypto'
import type { CallRecord } from '../../src/main/ledger/record'

/** A deterministic PRNG (mulberry32), so every run fills the same ledger. */
function rng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** provider, model, US$ per million input and output tokens. */
const MODELS: [string, string, number, number][] = [
  ['openai', 'gpt-4o-mini', 0.15, 0.6],
  ['openai', 'gpt-4o', 2.5, 10],
  ['openai', 'gpt-5', 1.25, 10],
  ['openai', 'gpt-5-mini', 0.25, 2],
  ['anthropic', 'claude-sonnet-4-5', 3, 15],
  ['anthropic', 'claude-haiku-4-5', 1, 5],
  ['anthropic', 'claude-opus-4-1', 15, 75],
  ['google', 'gemini-2.5-pro', 1.25, 10],
  ['google', 'gemini-2.5-flash', 0.3, 2.5],
  ['mistral', 'mistral-large-latest', 2, 6],
  ['groq', 'llama-3.3-70b-versatile', 0.59, 0.79],
]
const AGENTS = ['claude-code', 'codex', 'aider', 'cursor', 'cline', 'openhands', 'gemini-cli', '']
const TENANTS = ['tenant-0', 'tenant-1', 'tenant-2', 'tenant-3', 'tenant-4', '']
const KEYS_PER_TENANT = 8

/**
 * `n` calls over the last `days` days, in arrival order, made of agent sessions: each session
 * belongs to one tenant, API key and agent, mostly uses one model, and sends a burst of calls
 * 5 to 60 s apart (a tenth of them carry no session id).
 */
export function generateCalls(n: number, days: number, now: number): { calls: CallRecord[]; sessions: number; tenants: number } {
  const r = rng(42)
  const keys = TENANTS.map((t, ti) =>
    Array.from({ length: KEYS_PER_TENANT }, (_, k) => {
      const key = `sk-${t || 'none'}-${ti}-${k}-bench-key-000${k}`
      return { hash: createHash('sha256').update(key).digest('hex'), hint: `${key.slice(0, 3)}…${key.slice(-4)}` }
    }),
  )
  const calls: CallRecord[] = []
  let sessions = 0
  const start = now - days * 86_400_000
  while (calls.length < n) {
    sessions++
    const ti = Math.floor(r() * TENANTS.length)
    const key = keys[ti][Math.floor(r() * KEYS_PER_TENANT)]
    const agent = AGENTS[Math.floor(r() * AGENTS.length)]
    const main = MODELS[Math.floor(r() * MODELS.length)]
    const other = MODELS[Math.floor(r() * MODELS.length)]
    const named = r() >= 0.1
    const session = named ? `sess-${sessions.toString(36)}-${Math.floor(r() * 1e9).toString(36)}` : ''
    const count = Math.min(n - calls.length, 1 + Math.floor(-Math.log(1 - r()) * 200))
    let ts = start + Math.floor(r() * days * 86_400_000)
    for (let i = 0; i < count && ts < now; i++) {
      const [provider, model, pin, pout] = r() < 0.8 ? main : other
      const roll = r()
      const status = roll < 0.97 ? 200 : roll < 0.98 ? 429 : roll < 0.99 ? (r() < 0.5 ? 500 : 529) : 499
      const input = 200 + Math.floor(r() * r() * 60_000)
      const cacheRead = Math.floor(input * r() * 0.8)
      const cacheWrite = Math.floor((input - cacheRead) * r() * 0.3)
      const output = status === 200 ? 10 + Math.floor(r() * r() * 4000) : 0
      const cost = status === 200 ? ((input - cacheRead) * pin + cacheRead * pin * 0.1 + output * pout) / 1e6 : 0
      calls.push({
        ts,
        provider,
        model,
        endpoint: provider === 'anthropic' ? '/v1/messages' : '/v1/chat/completions',
        api_key_hash: key.hash,
        key_hint: key.hint,
        tenant: TENANTS[ti],
        agent,
        session,
        status,
        streamed: r() < 0.6,
        input_tokens: input,
        output_tokens: output,
        cache_read_tokens: cacheRead,
        cache_write_tokens: cacheWrite,
        cache_write_1h_tokens: 0,
        reasoning_tokens: model.startsWith('gpt-5') ? Math.floor(output * 0.6) : 0,
        cost_usd: cost,
        priced: true,
        estimated: false,
        latency_ms: Math.round(Math.exp(5.5 + r() * 4.5) * 100) / 100,
        error: status === 499 ? 'client_aborted' : null,
      })
      ts += 5_000 + Math.floor(r() * 55_000)
    }
  }
  calls.sort((a, b) => a.ts - b.ts)
  return { calls, sessions, tenants: TENANTS.length }
}
