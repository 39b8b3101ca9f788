import { describe, expect, it } from 'vitest'
import type { PlanAlert } from '../../src/main/plans/tracker'
import { postJson, request } from '../support/http'
import { serverOverMockUpstream } from '../support/server'
import { answer, recorded } from '../providers/ledger'

/**
 * Gemini Code Assist's quota answer (`retrieveUserQuota`) is a list of buckets, one per model and
 * token type, in no order the API promises. A model with two buckets (its requests and its tokens)
 * is two windows: the model's own name for its requests, `<model>_tokens` for the other. The
 * names were given in the order the buckets came, the first of a model taking the plain name: the
 * same quota read in the other order showed the tokens' share as the model's window, so a window
 * jumped between the two meters from one answer to the next, its pace drawn across both and a
 * notice told of the wrong one. Real server on SQLite, mock Code Assist.
 */

const s = serverOverMockUpstream()
const LOGIN = {
  authorization: 'Bearer ya29.a0-google-login-access-token-0001',
  'user-agent': 'GeminiCLI-tui/0.61.0/gemini-2.5-pro (linux; x64; terminal) google-api-nodejs-client/10.9.0',
}
const RESET = new Date(Date.now() + 6 * 3600_000).toISOString()
const BUCKETS = [
  { modelId: 'gemini-2.5-pro', tokenType: 'REQUESTS', remainingFraction: 0.6, remainingAmount: '60', resetTime: RESET },
  { modelId: 'gemini-2.5-flash', tokenType: 'REQUESTS', remainingFraction: 0.7, resetTime: RESET },
  { modelId: 'gemini-2.5-flash', tokenType: 'TOKENS', remainingFraction: 0.1, resetTime: RESET },
]

async function quota(project: string, buckets: object[]): Promise<void> {
  answer(s.upstream, { buckets })
  await recorded(s.t, () => postJson(`${s.t.url}/code-assist/v1internal:retrieveUserQuota`, { project }, LOGIN))
}

/** A project's windows, by name: [utilization, reset]. */
async function windows(hint: string): Promise<Record<string, [number, string]>> {
  const accounts = (await request(`${s.t.url}/api/dashboard/plans`)).json().accounts as any[]
  const a = accounts.find((x) => x.provider === 'code-assist' && x.account_hint === hint)
  return Object.fromEntries((a?.windows ?? []).map((w: any) => [w.name, [Number(w.utilization.toFixed(6)), w.resets_at]]))
}

describe("Code Assist's quota buckets in either order", () => {
  it('are the same windows, each named after its model and token type', async () => {
    await quota('bucket-order-project-0001', BUCKETS)
    await quota('bucket-order-project-0002', [...BUCKETS].reverse())
    const expected = {
      'gemini-2.5-pro': [0.4, RESET],
      'gemini-2.5-flash': [0.3, RESET],
      'gemini-2.5-flash_tokens': [0.9, RESET],
    }
    expect(await windows('buc…0001')).toEqual(expected)
    expect(await windows('buc…0002')).toEqual(expected)
  })

  it("the same project's quota read again in the other order moves no window, and tells of no crossing", async () => {
    const alerts: PlanAlert[] = []
    const off = s.t.server.context.plans!.onAlert((a) => alerts.push(a))
    try {
      await quota('bucket-order-project-0003', BUCKETS)
      await quota('bucket-order-project-0003', [...BUCKETS].reverse())
      expect((await windows('buc…0003'))['gemini-2.5-flash']).toEqual([0.3, RESET])
      // Only the tokens' window is over 80%: told once, under its own name.
      expect(alerts.map((a) => [a.window, a.threshold])).toEqual([['gemini-2.5-flash_tokens', 0.8]])
    } finally {
      off()
    }
  })
})
