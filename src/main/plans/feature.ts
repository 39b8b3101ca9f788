import { claudeUserId } from '../agents/claude-code'
import { hashKey } from '../proxy/attribution'
import { keyHint } from '../../shared/key-hint'
import { isObject } from '../metering/usage'
import type { CallState } from '../proxy/call/state'
import type { Feature } from '../server/context'
import { chatgptUser } from './chatgpt-user'
import { readMeter } from './read'
import { header } from './types'
import { type Observed, PlanTracker } from './tracker'

/**
 * Plan windows from the vendor's own meter: every upstream answer's headers are read
 * (./read.ts: Anthropic's unified windows, Codex's, and per-key rate limits), and the meters
 * answers' bodies carry (Gemini Code Assist's quotas: ./code-assist.ts); the latest state of each
 * account is kept with a short history (./tracker.ts), for GET /api/dashboard/plans, the tray and
 * notifications. The account is the credential's hash, or what stays when its tokens are
 * refreshed (often): for ChatGPT the `chatgpt-account-id` Codex sends with the user its token
 * names in that workspace (./chatgpt-user.ts), for Code Assist the
 * Google Cloud project its requests name, for a Claude login the `account_uuid` Claude Code
 * sends in its requests' metadata.
 */
export const plans: Feature = (ctx) => {
  const tracker = new PlanTracker()
  // A token's readings filed before its account was known go to the account.
  const accountOf = accounts((from, to) => tracker.merge('anthropic', from, to))
  ctx.plans = tracker
  ctx.onClose(() => tracker.close())
  ctx.observeHeaders((s, _status, headers, at) => {
    // An answer whose meter reads them with its body (a Codex 429's reset): its reading comes below.
    if (s.meter?.readsPlanHeaders) return
    const reading = readMeter(headers, at, s.ctx.provider.name)
    if (reading) tracker.observe(accountOf(s), reading, Date.now(), at)
  })
  ctx.observeReadings((s, reading) => tracker.observe(accountOf(s), reading))
}

/** Claude logins' tokens remembered with their account, for their calls that do not name it. */
const MAX_CLAUDE_TOKENS = 1024

function accounts(mapped: (token: string, account: string) => void): (s: CallState) => Observed {
  // A Claude login's token -> its account. Claude Code names the account in its Messages calls'
  // metadata, not in every call (token counting has none), and the token's hash is all such a call has.
  const claudeTokens = new Map<string, string>()
  const claudeAccount = (s: CallState): { account: string; provisional: boolean } => {
    const uuid = claudeUserId(s.info.body).account
    if (typeof uuid !== 'string' || !uuid) {
      const known = claudeTokens.get(s.ctx.apiKeyHash)
      if (known) return { account: known, provisional: false }
      // A call naming no account (token counting) of a token not seen naming one: its account may
      // be one already told of its window (another token of it, or this one before a restart).
      // A call that names the account '' (a token given alone) says it is an account of its own.
      const named = isObject(s.info.body) && isObject(s.info.body.metadata) && s.info.body.metadata.user_id !== undefined
      return { account: s.ctx.apiKeyHash, provisional: !named }
    }
    const account = hashKey(`claude-account:${uuid}`)
    if (!claudeTokens.has(s.ctx.apiKeyHash)) {
      if (claudeTokens.size >= MAX_CLAUDE_TOKENS) claudeTokens.delete(claudeTokens.keys().next().value as string)
      claudeTokens.set(s.ctx.apiKeyHash, account)
      // Its calls before this one (token counting, which names no account) were filed under the token.
      mapped(s.ctx.apiKeyHash, account)
    }
    return { account, provisional: false }
  }
  return (s) => {
    const who = { provider: s.ctx.provider.name, billing: s.ctx.billing ?? 'api' }
    const accountId = s.info.headers['chatgpt-account-id']
    if (typeof accountId === 'string' && accountId) {
      // The workspace's id: in a Team workspace every member's, each with windows of their own.
      const user = chatgptUser(header(s.info.headers, 'authorization'), s.ctx.apiKeyHash)
      return { ...who, account: hashKey(user ? `chatgpt-account:${accountId}:${user}` : `chatgpt-account:${accountId}`), hint: s.ctx.keyHint }
    }
    const project = who.provider === 'code-assist' ? s.info.body?.project : undefined
    if (typeof project === 'string' && project) return { ...who, account: hashKey(`code-assist-project:${project}`), hint: keyHint(project) }
    // A Claude login (an API key's limits are the key's own, whatever account sent it).
    if (who.provider === 'anthropic' && who.billing === 'subscription') return { ...who, ...claudeAccount(s), hint: s.ctx.keyHint }
    return { ...who, account: s.ctx.apiKeyHash, hint: s.ctx.keyHint }
  }
}
