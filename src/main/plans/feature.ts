import { hashKey } from '../proxy/attribution'
import type { Feature } from '../server/context'
import { readMeter } from './read'
import { PlanTracker } from './tracker'

/**
 * Plan windows from the vendor's own meter: every upstream answer's headers are read
 * (./read.ts: Anthropic's unified windows, Codex's, and per-key rate limits) and the latest
 * state of each account kept with a short history (./tracker.ts), for GET /api/dashboard/plans,
 * the tray and notifications. The account is the credential's hash, or for ChatGPT the hash of
 * the `chatgpt-account-id` Codex sends (its tokens are refreshed often; the account is not).
 */
export const plans: Feature = (ctx) => {
  const tracker = new PlanTracker()
  ctx.plans = tracker
  ctx.observeHeaders((s, _status, headers) => {
    const reading = readMeter(headers)
    if (!reading) return
    const accountId = s.info.headers['chatgpt-account-id']
    const account = typeof accountId === 'string' && accountId ? hashKey(`chatgpt-account:${accountId}`) : s.ctx.apiKeyHash
    tracker.observe(
      { provider: s.ctx.provider.name, account, hint: s.ctx.keyHint, billing: s.ctx.billing ?? 'api' },
      reading,
    )
  })
}
