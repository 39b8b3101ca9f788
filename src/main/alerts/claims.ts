import { createHash, randomUUID } from 'node:crypto'
import type { ThresholdEvent } from '../budgets/announcer'
import { crossingKey } from '../budgets/levels'
import { ensurePostgresSchema } from '../storage/postgres-migrations'
import type { SqlStore } from '../storage/sql'
import type { KeptClaim } from './outbox'
import { webhookDestination } from './webhook-url'
import type { WebhookTarget } from './webhooks'

/** A rolling window's threshold may be announced again this long after its last claim (its spend fell back under it meanwhile). */
export const REARM_MINUTES = 10
/** Claims older than this are deleted (the longest calendar period is a month). */
const KEEP_DAYS = 45

export type ClaimResult = 'won' | 'lost' | 'unasked'

/**
 * A claim this instance won: its row's id (and the old builds' name of it, when they name it
 * otherwise: `legacyClaimId`) and the token it wrote there, which a later claim won (here or by
 * another instance) replaces.
 */
export interface HeldClaim {
  id: string
  legacy?: string
  token: string
}

export type Claim = { result: 'won'; held: HeldClaim } | { result: Exclude<ClaimResult, 'won'> }

/** How a claim is kept with its alert in the instance's own file (./outbox.ts): its ids, and its token once won. */
export const keptClaim = (c: HeldClaim): KeptClaim => ({ ids: c.legacy ? [c.id, c.legacy] : [c.id], token: c.token })

/**
 * How the tokens of claims this build wins begin: their holder settles them or lets them go
 * (./handover.ts). Builds before it that wrote tokens (4f900dcc to 6acfdfbe) did neither, and one
 * standing by for such a claim asked for it every 2 s until it aged out (about 27 minutes with the
 * defaults), for nothing: a claim without the mark is done with for those standing by.
 */
export const SETTLING_OWNER = 'settling:'

/** Thrown to roll back a claim whose old builds' name another instance holds (`legacyClaimId`). */
const LOST_TO_OLD_BUILD = new Error('claimed under the old builds\' name')

/** How often an instance says it is alive (`alive_at`) on the claims it holds, while it holds any. */
export const ALIVE_MS = 5_000
/**
 * A claim whose holder has not said it is alive for this long is its instance's killed outright (a
 * crash, SIGKILL, the machine lost): free to take over. Stood by for until it aged out (about 27
 * minutes with the defaults), the alert was sent by no instance unless that one started again.
 */
export const DEAD_AFTER_S = 30

/**
 * Whether a claim's holder (of this build) has been silent for DEAD_AFTER_S. Only a claim said alive
 * since it was won (`alive_at` not before `claimed_at`, as this build writes both) is so judged:
 * builds before 41d35390 never write `alive_at`, and a rolling window's claim one of them won
 * again kept the one the last holder of this build left there, long past, and was taken over while
 * its delivery was under way (the webhook got the alert twice).
 */
const SILENT = (t: string) => `(${t}.alive_at >= ${t}.claimed_at AND ${t}.alive_at < now() - ${DEAD_AFTER_S} * interval '1 second')`

/**
 * `@rearm_s`: how long ago (seconds) the last claim must have been for this one to win again; null:
 * never, but from a holder of this build dead for DEAD_AFTER_S (an old build's, with no `alive_at`
 * of its own, never: `SILENT`).
 */
const CLAIM_SQL = `INSERT INTO alert_claims (id, owner, alive_at) VALUES (@id, @owner, now())
  ON CONFLICT (id) DO UPDATE SET claimed_at = now(), owner = EXCLUDED.owner, alive_at = now()
    WHERE (@rearm_s::float8 IS NOT NULL AND alert_claims.claimed_at < now() - @rearm_s::float8 * interval '1 second')
      OR (left(alert_claims.owner, ${SETTLING_OWNER.length}) = '${SETTLING_OWNER}' AND ${SILENT('alert_claims')})
  RETURNING id`

/**
 * PostgreSQL mode: every instance's meters count every instance's calls (budgets/feed/),
 * so each one sees a threshold crossed. It is claimed once per webhook (its address and format):
 * the first instance to claim it for a webhook sends it there; the others do not. An instance
 * with no webhook claims nothing (it claimed the crossing, and the one with the webhook never
 * sent it), and instances with different webhooks each send to theirs. A claim is one row per rule, key, period (its start), limit and threshold; a rolling
 * window's may be claimed again REARM_MINUTES after the last (one read back: `rearmSeconds`). When the database cannot be asked,
 * the alert is sent (twice rather than never).
 */
export class AlertClaims {
  private lastCleanup = 0
  /** The claims this instance holds (won, not yet let go nor settled), by token: said alive every ALIVE_MS. */
  private readonly holding = new Map<string, HeldClaim>()
  /**
   * Claims done with whose settle failed (the database not answering it), by token: tried again,
   * and said alive meanwhile, every ALIVE_MS. No longer said alive, such a claim (its alert
   * delivered) was taken over 30 s later as a dead instance's, and sent again.
   */
  private readonly unsettled = new Map<string, HeldClaim>()
  private alive: ReturnType<typeof setTimeout> | null = null
  private closed = false

  constructor(
    private readonly store: SqlStore,
    /**
     * A claim this instance holds found taken over by another (its beat not written for
     * DEAD_AFTER_S: the database not answering this instance, or its pool too busy, while another's
     * answered): that one sends the alert, so this one's retry goes. Kept, the webhook got it twice.
     */
    private readonly lost: (c: HeldClaim) => void = () => {},
  ) {}

  private hold(c: HeldClaim): void {
    if (this.closed) return
    this.holding.set(c.token, c)
    this.beat()
  }

  /**
   * Every ALIVE_MS while this instance holds claims or has settles to write: those settles tried
   * again, then every one of them said alive (one query), the last query's end timing the next.
   */
  private beat(): void {
    if (this.alive || this.closed || (this.holding.size === 0 && this.unsettled.size === 0)) return
    this.alive = setTimeout(() => {
      void (async () => {
        if (this.unsettled.size > 0) await this.settle([...this.unsettled.values()])
        const held = [...this.holding.values(), ...this.unsettled.values()]
        if (held.length === 0) return
        const ids = held.flatMap((h) => [h.id, ...(h.legacy ? [h.legacy] : [])])
        const tokens = held.map((h) => h.token)
        const rows = await this.store.all<{ owner: string }>('UPDATE alert_claims SET alive_at = now() WHERE id = ANY(@ids::text[]) AND owner = ANY(@tokens::text[]) RETURNING owner', { ids, tokens })
        const said = new Map<string, number>()
        for (const r of rows) said.set(r.owner, (said.get(r.owner) ?? 0) + 1)
        // Not all its rows under its token (and still held: not settled nor let go meanwhile): taken over.
        for (const h of held) {
          if (this.holding.get(h.token) !== h || (said.get(h.token) ?? 0) >= (h.legacy ? 2 : 1)) continue
          this.holding.delete(h.token)
          try {
            this.lost(h)
          } catch {
            // the listener's own failure: the claim is another's all the same
          }
        }
      })()
        .catch(() => {})
        .finally(() => {
          this.alive = null
          this.beat()
        })
    }, ALIVE_MS)
    this.alive.unref?.()
  }

  /**
   * Stops saying this instance is alive (the server's close, once it has let go the claims of the
   * alerts it dropped) and settles the claims it holds still, and once more those whose settle
   * failed before: an attempt cut there (the webhook may have taken it) is sent by no instance, as
   * before; held on, it would be taken over as a dead instance's and sent again. A settle the
   * database does not take here is not tried again: that claim is taken over DEAD_AFTER_S on and
   * its alert sent again (twice rather than never, as whenever the database cannot be asked).
   */
  async close(): Promise<void> {
    this.closed = true
    if (this.alive) clearTimeout(this.alive)
    this.alive = null
    await this.settle([...this.holding.values(), ...this.unsettled.values()])
  }

  /**
   * `won`: this instance holds the claim (its row, with the token `held` names), and sends the
   * alert; `lost`: another has sent it; `unasked`: the database could not be asked, and the alert
   * is sent all the same, but the row, if any, is not this instance's to let go.
   */
  async claim(e: ThresholdEvent, webhook: WebhookTarget): Promise<Claim> {
    return this.claimAs(claimId(e, webhook), legacyClaimId(e, webhook), rearmSeconds(e))
  }

  /**
   * The claim of an alert this instance kept for its next start (./outbox.ts) when it was killed
   * outright: `won` if it is still this instance's (its token there) or, sent unasked then (no
   * token), is claimed now, a rolling window's re-armed as at its crossing (`window`, made at
   * `madeAt`); `lost` if another instance holds or has sent it. Sent from the file with no claim,
   * it went to the webhook beside the one this start's read of the crossing back claimed and sent.
   */
  async resume(kept: KeptClaim, window: boolean, madeAt: number, now = Date.now()): Promise<Claim> {
    const [id, legacy = id] = kept.ids
    if (kept.token === undefined) return this.claimAs(id, legacy, window ? REARM_MINUTES * 60 + Math.max(0, now - madeAt) / 1000 : null)
    const held: HeldClaim = legacy === id ? { id, token: kept.token } : { id, legacy, token: kept.token }
    try {
      await ensurePostgresSchema(this.store)
      // Said alive again (it was not while the instance was down): taken over meanwhile, it is not its own.
      const rows = await this.store.all('UPDATE alert_claims SET alive_at = now() WHERE id = ANY(@ids::text[]) AND owner = @token RETURNING id', { ids: kept.ids, token: kept.token })
      if (rows.length !== new Set(kept.ids).size) return { result: 'lost' }
    } catch {
      // Not asked: as far as this instance knows it holds it still, and it is settled or let go by
      // its token as any, which leaves another instance's row be.
    }
    this.hold(held)
    return { result: 'won', held }
  }

  private async claimAs(id: string, legacy: string, rearm: number | null): Promise<Claim> {
    const token = `${SETTLING_OWNER}${randomUUID()}`
    const held: HeldClaim = legacy === id ? { id, token } : { id, legacy, token }
    const params = { owner: held.token, rearm_s: rearm }
    try {
      await ensurePostgresSchema(this.store)
      // Both names in one transaction, this build's first (as every instance of it takes them: one
      // waits for the other's, and loses): won only if both are, else neither row is written.
      const won = held.legacy === undefined
        ? (await this.store.all(CLAIM_SQL, { id, ...params })).length > 0
        : await this.store.transaction(async (tx) => {
          if ((await tx.all(CLAIM_SQL, { id, ...params })).length === 0) return false
          if ((await tx.all(CLAIM_SQL, { id: held.legacy, ...params })).length > 0) return true
          throw LOST_TO_OLD_BUILD
        }).catch((err: unknown) => {
          if (err === LOST_TO_OLD_BUILD) return false
          throw err
        })
      this.cleanup()
      if (won) this.hold(held)
      return won ? { result: 'won', held } : { result: 'lost' }
    } catch {
      return { result: 'unasked' }
    }
  }

  /**
   * Lets claims go: at shutdown, those of alerts whose retry was dropped there (a webhook's
   * Retry-After, the backoff) or that were claimed as the sender closed. Kept, the crossing read
   * back at the next start counted as sent though no instance sent it; let go, that start claims
   * and sends it. No attempt of this instance follows, so the webhook does not get it twice from here.
   * Only claims this instance won: one sent `unasked` may be another's row (it sent the alert),
   * which let go was sent again by the next start to read the crossing back. And only while it
   * holds them: a rolling window's claim won again since (by another instance, which sends or has
   * sent it; or here, by a later crossing) is that claim's, whose token replaced this one's. Let go
   * by its id alone, it was deleted, and the next start to read the crossing back sent it again.
   */
  async release(claims: readonly HeldClaim[]): Promise<void> {
    for (const c of claims) {
      this.holding.delete(c.token)
      this.unsettled.delete(c.token)
    }
    for (const c of claims) {
      for (const id of [c.id, ...(c.legacy ? [c.legacy] : [])]) await this.store.run('DELETE FROM alert_claims WHERE id = @id AND owner = @token', { id, token: c.token }).catch(() => {})
    }
  }

  /**
   * Marks claims whose alert is done with (delivered; or failed after the webhook may have taken
   * it, so not let go): instances standing by for them (./handover.ts) stop. Their rows stay (the
   * crossing was sent), held by no instance, as a row claimed before claims had owners is. One
   * whose settle fails is tried again every ALIVE_MS, and said alive until it is written.
   */
  async settle(claims: readonly HeldClaim[]): Promise<void> {
    for (const c of claims) this.holding.delete(c.token)
    for (const c of claims) {
      let written = true
      for (const id of [c.id, ...(c.legacy ? [c.legacy] : [])]) {
        await this.store.run('UPDATE alert_claims SET owner = NULL WHERE id = @id AND owner = @token', { id, token: c.token }).catch(() => {
          written = false
        })
      }
      // Not written: tried again (and said alive until it is) from the next beat on.
      if (written) this.unsettled.delete(c.token)
      else this.unsettled.set(c.token, c)
    }
    this.beat()
  }

  /**
   * Where claims another instance won stand (./handover.ts), in one query: `free`, let go (its
   * delivery failed, the webhook never took it; or a shutdown), or its holder dead (not said alive
   * for DEAD_AFTER_S: killed outright), to take over; `done`, its alert done with
   * (`settle`), claimed longer ago than a delivery can take (`waitMs`: sent), or held by a build
   * that never settles nor lets go
   * (its token without SETTLING_OWNER); `held`, its delivery under way. Throws when the database
   * cannot be asked.
   */
  async standing(ids: readonly string[], waitMs: number): Promise<Map<string, 'free' | 'done' | 'held'>> {
    const out = new Map<string, 'free' | 'done' | 'held'>(ids.map((id) => [id, 'free']))
    if (ids.length === 0) return out
    const rows = await this.store.all<{ id: string; state: 'free' | 'done' | 'held' }>(
      `SELECT id, CASE WHEN owner IS NULL OR left(owner, ${SETTLING_OWNER.length}) <> @mark THEN 'done'
          WHEN ${SILENT('alert_claims')} THEN 'free'
          WHEN claimed_at < now() - @wait_s::float8 * interval '1 second' THEN 'done' ELSE 'held' END AS state
        FROM alert_claims WHERE id = ANY(@ids::text[])`,
      { ids: [...ids], mark: SETTLING_OWNER, wait_s: waitMs / 1000 },
    )
    for (const r of rows) out.set(r.id, r.state)
    return out
  }

  private cleanup(): void {
    const now = Date.now()
    if (now - this.lastCleanup < 3600_000) return
    this.lastCleanup = now
    void this.store.run(`DELETE FROM alert_claims WHERE claimed_at < now() - interval '${KEEP_DAYS} days'`).catch(() => {})
  }
}

/**
 * How long ago the last claim of `e`'s threshold for a webhook must have been for `e` to be sent
 * there; null: never again (a calendar period's, claimed once in it). A rolling window's crossing
 * seen here: REARM_MINUTES. One read back (a start, a read of the meters) re-arms only if the
 * claim came REARM_MINUTES or more before the window was last crossed (its spend fell under the
 * threshold and rose over it again after it was sent): re-armed by time alone, the crossing
 * already sent would be sent again at every restart; never re-armed, a second crossing while the
 * instance with the webhook was down was never sent.
 */
function rearmSeconds(e: ThresholdEvent, now = Date.now()): number | null {
  if (e.state.period !== 'window') return null
  if (!e.restored) return REARM_MINUTES * 60
  if (e.crossedAt === undefined) return null
  return REARM_MINUTES * 60 + Math.max(0, now - e.crossedAt) / 1000
}

/**
 * The same on every instance for the same crossing and webhook (the announcer's own key for it,
 * hashed: it names the key's hash), the webhook by where it is POSTed (webhookDestination),
 * however each instance's config spells it (`https://HOOKS.slack.com:443/x` is
 * `https://hooks.slack.com/x`) and whatever password it gives it: claimed under each spelling, or
 * each password (one config not yet given the webhook's new one), the channel got the alert from
 * both. An address already so spelled, with no user name, password or fragment (nearly every one),
 * keeps the id it had.
 */
export function claimId(e: ThresholdEvent, webhook: WebhookTarget): string {
  return createHash('sha256').update(`${crossingKey(e.rule, e.key.hash, e.state, e.pct)}\n${webhook.format} ${webhookDestination(webhook.url)}`).digest('hex')
}

/**
 * The id builds before this naming (33f1877f) gave the same claim: the webhook's URL as an HTTP
 * client reads it, user name, password and fragment in. For a webhook with none it is `claimId`.
 * During a rolling upgrade an old build claims only that one: a claim takes both, and wins only if
 * both are free, so an old build's claim stops this one's and this one's stops theirs (builds
 * before this one took only their own, and a webhook behind basic auth got the alert from both
 * builds). An old build whose config holds another password names it otherwise still: that is the
 * two-passwords case this naming fixes, and it ends with the upgrade.
 */
export function legacyClaimId(e: ThresholdEvent, webhook: WebhookTarget): string {
  let href = webhook.url
  try {
    href = new URL(webhook.url).href
  } catch {
    // as the old builds took it
  }
  return createHash('sha256').update(`${crossingKey(e.rule, e.key.hash, e.state, e.pct)}\n${webhook.format} ${href}`).digest('hex')
}
