import { hashKey, keyHint } from '../proxy/attribution'
import type { CallState } from '../proxy/call/state'
import type { Feature } from '../server/context'
import { readMeter } from './read'
import { type Observed, PlanTracker } from './tracker'

/**
 * Plan windows from the vendor's own meter: every upstream answer's headers are read
 * (./read.ts: Anthropic's unified windows, Codex's, and per-key rate limits), and the meters
 * answers' bodies carry (Gemini Code Assist's quotas: ./code-assist.ts); the latest state of each
 * account is kept with a short history (./tracker.ts), for GET /api/dashboard/plans, the tray and
 * notifications. The account is the credential's hash, or what stays when its tokens are
 * refreshed (often): for ChatGPT the `chatgpt-account-id` Codex sends, for Code Assist the
 * Google Cloud project its requests name.
 */
export const plans: Feature = (ctx) => {
  const tracker = new PlanTracker()
  ctx.plans = tracker
  ctx.observeHeaders((s, _status, headers) => {
    const reading = readMeter(headers)
    if (reading) tracker.observe(accountOf(s), reading)
  })
  ctx.observeReadings((s, reading) => tracker.observe(accountOf(s), reading))
}

function accountOf(s: CallState): Observed {
  const who = { provider: s.ctx.provider.name, billing: s.ctx.billing ?? 'api' }
  const accountId = s.info.headers['chatgpt-account-id']
  if (typeof accountId === 'string' && accountId) return { ...who, account: hashKey(`chatgpt-account:${accountId}`), hint: s.ctx.keyHint }
  const project = s.ctx.provider.name === 'code-assist' ? s.info.body?.project : undefined
  if (typeof project === 'string' && project) return { ...who, account: hashKey(`code-assist-project:${project}`), hint: keyHint(project) }
  return { ...who, account: s.ctx.apiKeyHash, hint: s.ctx.keyHint }
}
