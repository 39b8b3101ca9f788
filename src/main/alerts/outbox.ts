import { createHash } from 'node:crypto'
import type Database from 'better-sqlite3'
import type { OutboundAlert } from './payload'
import { webhookDestination, webhookEndpoint } from './webhook-url'
import type { WebhookTarget } from './webhooks'

/** How long an alert other than a calendar period's threshold is kept for the next start (a runaway agent's). */
const KEEP_OTHER_MS = 3600_000

/**
 * PostgreSQL: the claim (../claims.ts) an alert kept here is sent under: its row's ids (this
 * build's name, then the old builds' when it differs) and, once won, the token this instance
 * wrote there; no token: sent with the database not answering (`unasked`), not claimed yet.
 */
export interface KeptClaim {
  ids: string[]
  token?: string
}

/** One alert not delivered to one webhook by a shutdown, to send at the next start. */
export interface Unsent {
  id: string
  target: WebhookTarget
  payload: OutboundAlert
  claim?: KeptClaim
}

/** An alert taken out of the outbox to send (until `until`, when it goes stale), with the claim it was kept with. */
export interface Taken {
  target: WebhookTarget
  payload: OutboundAlert
  until: number
  claim?: KeptClaim
}

const hashed = (format: string, url: string) => createHash('sha256').update(`${format} ${url}`).digest('hex')

/**
 * A webhook as it is kept: its format and where it is POSTed (webhookDestination, as alert claims
 * name it: without the user name and password it may carry, or a fragment, never sent), hashed
 * (Slack's paths are secrets). Kept by the URL's text as configured, an alert was dropped by a
 * start whose config spelled the webhook otherwise (`HTTP://`, a default port) or gave it a new
 * password (the one it had just been refusing, 401); kept with its fragment, by one that gave it
 * another fragment or none.
 */
const targetId = (t: WebhookTarget) => hashed(t.format, webhookDestination(t.url))
/** As earlier builds kept it (the URL's text; then the URL without credentials, fragment kept): a row they left is still sent. */
const legacyTargetIds = (t: WebhookTarget) => [hashed(t.format, t.url), hashed(t.format, webhookEndpoint(t.url))]

/**
 * Until when an alert is worth sending: a calendar period's threshold until its period resets, a
 * rolling window's for a window's length (its `resets_at` is when the spend falls under the limit,
 * which for a lower threshold can be a minute away), another for an hour; each from when it was
 * made (`created_at`). Counted from each save, an alert kept again by every start that could not
 * deliver it (the webhook down across restarts) lived an hour or a window longer at each one.
 */
function untilOf(payload: OutboundAlert, now: number): number {
  const made = Date.parse(payload.created_at)
  const from = Number.isFinite(made) ? Math.min(made, now) : now
  if (!('window' in payload)) return from + KEEP_OTHER_MS
  if (payload.window.period === 'window' && payload.window.window_hours) return from + payload.window.window_hours * 3600_000
  const resets = payload.window.resets_at ? Date.parse(payload.window.resets_at) : NaN
  return Number.isFinite(resets) ? resets : from + KEEP_OTHER_MS
}

/**
 * Webhook alerts not delivered yet, kept in this instance's own SQLite file (`alert_outbox`, ledger
 * migration 29) from when each is made until it is delivered or has failed its last attempt, and
 * sent by the next start to the same webhook, if it is still configured and the alert's window has
 * not reset: those a shutdown left undelivered (a retry still waiting, an attempt under way the
 * webhook then refused), and those of a process killed outright (a crash, SIGKILL, power lost).
 * Without it they were lost: a threshold was kept as announced, so the next start never sent it.
 * On PostgreSQL a threshold's is kept here while its claim stands (./claims.ts), with that claim
 * (`KeptClaim`): a shutdown lets the claim go and deletes it here, a process killed outright
 * leaves both, so only this instance's next start sends it, under that claim while it is still its
 * own (one sent unasked, claimed then). Sent with no claim, one sent unasked went twice (from here
 * and claimed by the start's read of the crossing back), and one refused to the last never let its
 * claim go for an instance standing by.
 */
export class AlertOutbox {
  constructor(private readonly db: Database.Database) {}

  keep(unsent: readonly Unsent[], now = Date.now()): void {
    if (unsent.length === 0) return
    const insert = this.db.prepare('INSERT OR REPLACE INTO alert_outbox (id, target, body, until, claim) VALUES (@id, @target, @body, @until, @claim)')
    this.db.transaction(() => {
      for (const u of unsent) insert.run({ id: u.id, target: targetId(u.target), body: JSON.stringify(u.payload), until: untilOf(u.payload, now), claim: u.claim ? JSON.stringify(u.claim) : null })
    })()
  }

  /** Deletes the alerts of `ids` (delivered, failed for good, or cut at shutdown: the webhook may have taken it). */
  forget(ids: readonly string[]): void {
    if (ids.length === 0) return
    const del = this.db.prepare('DELETE FROM alert_outbox WHERE id = ?')
    this.db.transaction(() => {
      for (const id of ids) del.run(id)
    })()
  }

  /** The alerts kept for the webhooks of `targets`, taken out of the outbox (those of other webhooks, or too old, go too: all of them when `targets` is empty). */
  take(targets: readonly WebhookTarget[], now = Date.now()): Taken[] {
    const byId = new Map([...targets.flatMap((t) => legacyTargetIds(t).map((id) => [id, t] as const)), ...targets.map((t) => [targetId(t), t] as const)])
    return this.db.transaction(() => {
      const rows = this.db.prepare('SELECT target, body, until, claim FROM alert_outbox').all() as { target: string; body: string; until: number; claim: string | null }[]
      // Every row goes, those of webhooks no longer configured (none: all removed) and stale ones too;
      // an empty outbox (nearly every start) is not written to.
      if (rows.length > 0) this.db.prepare('DELETE FROM alert_outbox').run()
      const out: Taken[] = []
      for (const r of rows) {
        const target = byId.get(r.target)
        if (!target || !(r.until > now)) continue
        try {
          const payload = JSON.parse(r.body) as OutboundAlert
          out.push(r.claim === null ? { target, payload, until: r.until } : { target, payload, until: r.until, claim: JSON.parse(r.claim) as KeptClaim })
        } catch {
          // not what this wrote: dropped
        }
      }
      // In the order they were made.
      return out.sort((a, b) => a.payload.created_at.localeCompare(b.payload.created_at))
    })()
  }
}
