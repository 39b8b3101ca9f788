import type { RunawayEvent } from '../budgets/runaway'
import { formatUsd, formatUsdOfLimit } from './money'
import type { Notice } from './notices'

/** The runaway settings a notice explains (runaway.loop.window_minutes, runaway.spend_rate.usd_per_minute). */
export interface RunawaySettings {
  windowMinutes: number
  usdPerMinute: number | null
}

/** A session id short enough for a notification (Claude Code's are UUIDs). */
function shortSession(session: string): string {
  const s = Array.from(session, (c) => (c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f ? '?' : c)).join('')
  return s.length > 12 ? `${s.slice(0, 8)}…` : s
}

/** The words of the desktop notification for a runaway event: which agent and session, what happened, what to do. */
export function runawayNotice(e: RunawayEvent, settings: RunawaySettings): Notice {
  const agent = e.agent || 'An agent'
  const session = shortSession(e.session)
  const level = e.action === 'block' ? 'blocking' : 'warning'
  if (e.kind === 'loop') {
    const what = `${agent} (session ${session}) sent the same ${e.model || 'request'} conversation tail ${e.count} times in ${settings.windowMinutes} minutes.`
    return {
      level,
      title: `Agent stuck in a loop: ${agent}`,
      body:
        e.action === 'block'
          ? `${what} Burnrate refuses these repeats. Stop the agent, or change its task or start a new session.`
          : `${what} Its calls still go through: stop the agent, or give it a new instruction.`,
    }
  }
  // The spend and the alarm it passed read differently ($0.503 above $0.50, $0.00036 above $0.0003),
  // never the same figure twice ("<$0.01 … alarm above <$0.01"), as a budget's spend and limit.
  const [spent, alarm] = settings.usdPerMinute === null ? [formatUsd(e.usd_last_minute), ''] : formatUsdOfLimit(e.usd_last_minute, settings.usdPerMinute)
  const limit = settings.usdPerMinute === null ? '' : ` (alarm above ${alarm}/minute)`
  const what = `${agent} (session ${session}) spent ${spent} in the last minute${limit}.`
  return {
    level,
    title: `Agent spending fast: ${agent}`,
    body:
      e.action === 'block'
        ? `${what} Burnrate refuses its calls until its spend rate falls. Check what it is doing, and stop it if it is stuck.`
        : `${what} Its calls still go through: check what it is doing, and stop it if it is stuck.`,
  }
}

/** Sessions remembered; the oldest are forgotten beyond it. */
const MAX_REMEMBERED = 1000

/**
 * Which runaway notices were shown: once per session and kind while the app runs (the detector
 * announces again after each window; a notification every ten minutes for one stuck agent is
 * noise, the dashboard and webhooks keep the full record).
 */
export class RunawayNoticeLog {
  private readonly seen = new Set<string>()

  /** True the first time this session trips this kind (and remembers it). */
  claim(e: RunawayEvent): boolean {
    const id = `${e.api_key_hash}\u0000${e.session}\u0000${e.kind}`
    if (this.seen.has(id)) return false
    this.seen.add(id)
    if (this.seen.size > MAX_REMEMBERED) this.seen.delete(this.seen.values().next().value as string)
    return true
  }
}
