import { calcPrice, findProvider } from '@pydantic/genai-prices'
import { expect } from 'vitest'
import Database from 'better-sqlite3'
import { eventually } from '../support/http'
import type { MockUpstream } from '../support/mock-upstream'
import { sseChunks } from '../support/fixtures'
import type { TestServer } from '../support/server'
import { ledgerRows } from '../support/ledger-rows'
import { billedAt, hasPeakHours } from '../../src/main/pricing/deepseek-hours'

/** Every recorded call, oldest first, read from the server's real SQLite file. */
export function rows(t: TestServer): any[] {
  return ledgerRows(t.dbFile)
}

/** Runs `call`, then waits until the ledger has written the row it caused, and returns it. */
export async function recorded(t: TestServer, call: () => Promise<unknown>): Promise<any> {
  const before = rows(t).length
  await call()
  return eventually(() => {
    const r = rows(t)
    return r.length > before ? r[r.length - 1] : undefined
  })
}

/** The id of the last call recorded once the calls under way are over and written (0: none yet). */
export async function lastCallId(t: TestServer): Promise<number> {
  await t.server.proxy.drain(2000)
  t.server.ledger.flush()
  const db = new Database(t.dbFile, { readonly: true })
  try {
    return ((db.prepare('SELECT max(id) AS m FROM calls').get() as { m: number | null }).m ?? 0) as number
  } finally {
    db.close()
  }
}

/** The calls recorded after call `before`, oldest first, once there are `n` of them. */
export async function rowsAfter(t: TestServer, before: number, n: number): Promise<any[]> {
  const db = new Database(t.dbFile, { readonly: true })
  try {
    return (await eventually(() => {
      const r = db.prepare('SELECT * FROM calls WHERE id > ? ORDER BY id').all(before) as any[]
      return r.length >= n ? r : undefined
    })) as any[]
  } finally {
    db.close()
  }
}

/** Makes the mock answer with `body` as JSON, or as an SSE stream cut into chunks. */
export function answer(upstream: MockUpstream, body: Buffer | string | object, kind: 'json' | 'sse' = 'json'): void {
  const buf = Buffer.isBuffer(body) ? body : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body))
  if (kind === 'sse') {
    upstream.setResponder(() => ({
      status: 200,
      headers: { 'content-type': 'text/event-stream; charset=utf-8' },
      chunks: sseChunks(buf),
      delayMs: 1,
    }))
  } else {
    upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: buf }))
  }
}

/**
 * A voice turn's `usageMetadata`: 1,000 tokens of text (the system prompt, 800 of it from the
 * cache) and a new 5,000-token audio clip; 100 output tokens. `cacheTokensDetails` as given (the
 * cache's modalities, or none).
 */
export function geminiVoiceTurn(cacheTokensDetails?: readonly { modality: string; tokenCount: number }[]) {
  return {
    promptTokenCount: 6_000,
    cachedContentTokenCount: 800,
    candidatesTokenCount: 100,
    totalTokenCount: 6_100,
    promptTokensDetails: [
      { modality: 'TEXT', tokenCount: 1_000 },
      { modality: 'AUDIO', tokenCount: 5_000 },
    ],
    ...(cacheTokensDetails ? { cacheTokensDetails } : {}),
  }
}

/**
 * A Gemini answer whose prompt holds text, image and audio parts (part of the audio cached) and
 * whose output is audio, as `generateContent` reports it: 3,000 prompt tokens (1,000 cached),
 * 500 output tokens.
 */
export function geminiMultimodalAnswer(model: string) {
  return {
    candidates: [],
    usageMetadata: {
      promptTokenCount: 3_000,
      cachedContentTokenCount: 1_000,
      candidatesTokenCount: 500,
      totalTokenCount: 3_500,
      promptTokensDetails: [
        { modality: 'TEXT', tokenCount: 1_000 },
        { modality: 'IMAGE', tokenCount: 1_200 },
        { modality: 'AUDIO', tokenCount: 800 },
      ],
      cacheTokensDetails: [{ modality: 'AUDIO', tokenCount: 600 }, { modality: 'TEXT', tokenCount: 400 }],
      candidatesTokensDetails: [{ modality: 'AUDIO', tokenCount: 500 }],
    },
    modelVersion: model,
  }
}

/** The price library's own price of a usage, for a provider's price data at `ts`: what a row's cost must equal. */
export function libraryPrice(providerId: string, usage: Record<string, number>, model: string, ts: number): number {
  const p = calcPrice(usage, model, { providerId, timestamp: pricedAt(providerId, model, ts) })
  expect(p, `${providerId} prices ${model}`).not.toBeNull()
  return p!.total_price
}

/**
 * The library's price of `usage` for one of Perplexity's Sonar models with its per-request fee
 * set to `feePerThousand` (Perplexity's fee for a search context size): the price data has one
 * fee per model, the highest, so the fee of the low or medium context is priced by the data's
 * own table with that one price changed, every other price and the arithmetic the library's.
 */
export function sonarPrice(usage: Record<string, number>, model: string, feePerThousand: number, at: Date): number {
  const data = findProvider({ providerId: 'perplexity' })!
  const m = data.models.find((x) => x.id === model)!
  expect(Array.isArray(m.prices)).toBe(false)
  expect((m.prices as Record<string, unknown>).requests_kcount).toBeGreaterThan(0)
  const table = { ...m, prices: { ...(m.prices as Record<string, number>), requests_kcount: feePerThousand } }
  return calcPrice(usage, model, { provider: { ...data, models: [table], fallback_model_providers: undefined }, timestamp: at })!.total_price
}

/** The time the library is asked for: a DeepSeek call's whose prices have its peak hours, as Burnrate prices them (src/main/pricing/deepseek-hours.ts). */
function pricedAt(providerId: string, model: string, ts: number): Date {
  const at = new Date(ts)
  if (providerId !== 'deepseek') return at
  const table = calcPrice({ input_tokens: 1 }, model, { providerId, timestamp: at })?.model
  return table && hasPeakHours(table) ? billedAt(at) : at
}
