import { randomUUID } from 'node:crypto'
import { budgetsOf } from '../budgets'
import type { ThresholdEvent } from '../budgets/announcer'
import { AlertClaims, claimId, type HeldClaim, keptClaim, legacyClaimId } from './claims'
import type { Feature, ServerContext } from '../server/context'
import { AlertOutbox, type KeptClaim, type Taken, type Unsent } from './outbox'
import { type OutboundAlert, runawayPayload, testPayload, thresholdAlertId, thresholdPayload } from './payload'
import { CLOSE_WAIT_MS, type Delivery, type WebhookTarget, WebhookSender } from './webhooks'
import { SentHere } from './sent-here'
import { ClaimStandby, deliveryMs } from './handover'
import { LateClaims } from './late-claims'

export interface Alerts {
  webhooks: WebhookSender
  /** PostgreSQL: how many claims other instances won this instance stands by for now (./handover.ts); 0 on SQLite. */
  standingBy(): number
}

const installed = new WeakMap<ServerContext, Alerts>()

/** The alert senders of a server, created (and subscribed to the budget engine) on first use. */
export function alertsOf(ctx: ServerContext): Alerts {
  const existing = installed.get(ctx)
  if (existing) return existing
  const c = ctx.config.alerts
  // Alerts not delivered yet are kept in this instance's own file (./outbox.ts) from when each is
  // made until it is delivered or fails its last attempt, so a shutdown or a process killed outright
  // leaves them for the next start, and those the last one left are sent now. On PostgreSQL a
  // threshold's claim stands while it is kept (a kill keeps both: only this instance sends it); a
  // shutdown lets the claim go instead, and the next instance to read the crossing back sends it.
  const outbox = new AlertOutbox(ctx.db)
  // The deliveries kept in the outbox, until each ends; the ids whose row could not be deleted then (tried again at close).
  const made = new Map<Delivery, Unsent>()
  const unforgotten = new Set<string>()
  const forget = (ids: readonly string[]) => {
    try {
      outbox.forget(ids)
      for (const id of ids) unforgotten.delete(id)
    } catch {
      for (const id of ids) unforgotten.add(id)
    }
  }
  const onSettled = (d: Delivery) => {
    if (made.delete(d)) forget([d.id])
    const held = claimOf.get(d)
    if (!held || !claims) return
    // Failed with the webhook never having taken it (a stale password's 401, a 5xx, no connection):
    // let go, for an instance standing by (./handover.ts) to send with its settings. Otherwise
    // settled: those standing by stop (delivered, or it may have been: never sent twice).
    done(d, held)
  }
  // Delivery `d`'s claim `held`, its delivery over (or the server closing): let go or settled, as above.
  const done = (d: Delivery, held: HeldClaim) => {
    byToken.delete(held.token)
    if (!claims) return
    const ended = d.status === 'failed' && !webhooks.mayHaveReached(d) ? claims.release([held]) : claims.settle([held])
    claiming.add(ended)
    void ended.finally(() => claiming.delete(ended))
  }
  const webhooks = new WebhookSender(c.webhooks, { retries: c.retries, backoffMs: c.backoff_ms, timeoutMs: c.timeout_ms, egress: ctx.egress, onSettled })
  const { engine, runaway } = budgetsOf(ctx)
  // PostgreSQL: every instance sees every crossing; the one that claims it sends it (./claims.ts).
  // A claim found taken over by another instance (./claims.ts): that one sends it, and this one's retry goes.
  const claims = ctx.store.dialect === 'postgres' ? new AlertClaims(ctx.store, (held) => {
    const d = byToken.get(held.token)
    if (d) webhooks.abandon(d)
  }) : null
  // `claimed`: on PostgreSQL, the claim each (of `only`'s) is sent under, kept with it (./outbox.ts KeptClaim).
  const post = (payload: OutboundAlert, only: readonly WebhookTarget[] = webhooks.webhooks, claimed?: readonly KeptClaim[]) => {
    const sent = webhooks.send(payload, only)
    // Written before any attempt can end (each is under way, its answer not read yet).
    const kept: Unsent[] = sent.map((d, i) => (claimed ? { id: d.id, target: only[i], payload, claim: claimed[i] } : { id: d.id, target: only[i], payload }))
    sent.forEach((d, i) => made.set(d, kept[i]))
    try {
      outbox.keep(kept)
    } catch (err) {
      // Kept at shutdown if still not delivered then.
      ctx.log.warn(`alerts: could not keep an alert being sent for the next start yet: ${(err as Error).message}`)
    }
    return sent
  }
  const send = (e: ThresholdEvent, only: readonly WebhookTarget[], claimed?: KeptClaim[]) => post(thresholdPayload(e, thresholdAlertId(e), Date.now()), only, claimed)
  // Claimed per webhook: each one configured here that no other instance has sent it to. The
  // claims of alerts not sent by shutdown (a retry waiting, the sender closed) are let go then.
  const claimOf = new WeakMap<Delivery, HeldClaim>()
  // The delivery of each claim held, by its token (to find the one whose claim another instance took over).
  const byToken = new Map<string, Delivery>()
  const own = (d: Delivery, held: HeldClaim) => {
    claimOf.set(d, held)
    byToken.set(held.token, d)
  }
  // Sent with their claim not asked (the database failed): no claim of this instance to let go,
  // nor kept for the next start, which reads the crossing back and claims it then.
  const unasked = new WeakSet<Delivery>()
  // Their claims, asked again until the database answers: written, another instance reading the
  // crossing back finds it sent. Won while the delivery goes on, the claim is its own as any
  // (let go at shutdown, settled or let go as it ends; so while the server closes, which waits for
  // the ask under way); won after, settled or let go at once.
  let closing = false
  const late = claims
    ? new LateClaims(claims, (d) => d.status === 'failed' && !webhooks.mayHaveReached(d), (d, held) => {
      if (d.status === 'pending') {
        own(d, held)
        unasked.delete(d)
        if (closing) return
        // Kept with its token now: killed before it is delivered, the next start sends it under it.
        const u = made.get(d)
        if (u) {
          const again = { ...u, claim: keptClaim(held) }
          made.set(d, again)
          try {
            outbox.keep([again])
          } catch {
            // kept with its ids only: a start after a kill claims it then (lost to this one's row, not sent again)
          }
        }
      } else done(d, held)
    })
    : null
  const unsent: HeldClaim[] = []
  const claiming = new Set<Promise<void>>()
  // Claimed at once, sent in the order they were announced: sent as each claim answered, a slower
  // claim of a call's 50% (a connection being opened) put its "limit reached" first at the webhook.
  let previous: Promise<unknown> = Promise.resolve()
  // Noted as claimed, forgotten if the claim is lost: a crossing found again that this instance
  // sent (a read that missed the call, ./sent-here.ts) is not claimed again.
  const sentHere = new SentHere()
  // Claims lost for one of this instance's webhooks: stood by for until the winner's delivery ends,
  // and claimed again if the winner lets it go (its delivery failed); not stood by for again then.
  const standby = claims ? new ClaimStandby(claims, deliveryMs({ retries: c.retries, backoffMs: c.backoff_ms, timeoutMs: c.timeout_ms }), (e, w) => claimed(claims, e, [w], false)) : null
  const claimed = (c: AlertClaims, e: ThresholdEvent, only: readonly WebhookTarget[] = webhooks.webhooks, standBy = true) => {
    const targets = e.restored ? only.filter((w) => !sentHere.covers(claimId(e, w), e)) : only
    if (targets.length === 0) return
    const ids = targets.map((w) => claimId(e, w))
    for (const id of ids) sentHere.note(id, e)
    const asked = Promise.all(targets.map((w) => c.claim(e, w)))
    const p: Promise<void> = previous
      .then(() => asked)
      .then((results) => {
        results.forEach((r, i) => {
          if (r.result !== 'lost') return
          sentHere.forget(ids[i])
          if (standBy) standby?.add(ids[i], e, targets[i])
        })
        const mine = targets.filter((_, i) => results[i].result !== 'lost')
        // Each of `mine`'s: the claim won, or null (sent unasked).
        const held = results.flatMap((r) => (r.result === 'won' ? [r.held] : r.result === 'unasked' ? [null] : []))
        if (mine.length === 0) return
        // Sent unasked: kept with the claim's ids, for a start after a kill to claim it then.
        const kept = mine.map((w, i) => {
          const c = held[i]
          if (c) return keptClaim(c)
          const [id, legacy] = [claimId(e, w), legacyClaimId(e, w)]
          return { ids: legacy === id ? [id] : [id, legacy] }
        })
        const sent = send(e, mine, kept)
        if (sent.length === 0) unsent.push(...held.filter((c) => c !== null))
        sent.forEach((d, i) => {
          const c = held[i]
          if (c) own(d, c)
          else {
            unasked.add(d)
            late?.add(d, e, mine[i])
          }
        })
      })
      .finally(() => claiming.delete(p))
    previous = p.catch(() => {})
    claiming.add(p)
  }
  // An alert a kill left (./outbox.ts), sent after those before it under the claim it was kept
  // with, if it is still this instance's; lost (another instance holds or has sent it), dropped.
  // Noted as sent here at once: this start's read of the crossing back does not claim it again.
  const resumed = (u: Taken) => {
    const k = u.claim
    if (!claims || !k) {
      const p: Promise<void> = previous.then(() => void post(u.payload, [u.target])).finally(() => claiming.delete(p))
      previous = p.catch(() => {})
      claiming.add(p)
      return
    }
    sentHere.hold(k.ids[0], u.until)
    const window = 'window' in u.payload && u.payload.window.period === 'window'
    const asked = claims.resume(k, window, Date.parse(u.payload.created_at))
    const p: Promise<void> = previous
      .then(() => asked)
      .then((r) => {
        if (r.result === 'lost') return void sentHere.forget(k.ids[0])
        const [d] = post(u.payload, [u.target], [r.result === 'won' ? keptClaim(r.held) : k])
        if (r.result === 'won') {
          if (d) own(d, r.held)
          else unsent.push(r.held)
        } else if (d) unasked.add(d)
      })
      .finally(() => claiming.delete(p))
    previous = p.catch(() => {})
    claiming.add(p)
  }
  // Read with no webhook configured too: the rows (alert bodies) of webhooks since removed are cleared.
  try {
    const taken = outbox.take(webhooks.webhooks)
    let inTurn = false
    for (const u of taken) {
      // PostgreSQL: one kept with its claim (a threshold's, left by a kill) is sent under it, as
      // long as it is still this instance's (claimed now if it was sent unasked), in its turn.
      if (claims && u.claim) inTurn = true
      if (!inTurn) post(u.payload, [u.target])
      else resumed(u)
    }
  } catch (err) {
    ctx.log.warn(`alerts: could not read the alerts the last run left undelivered: ${(err as Error).message}`)
  }
  ctx.onClose(engine.onThreshold((e) => (claims ? claimed(claims, e) : void send(e, webhooks.webhooks))))
  // A threshold another instance announced while this one was down (or not listening), found
  // crossed by a read: sent to those of this instance's webhooks no instance has sent it to.
  if (claims && webhooks.webhooks.length > 0) ctx.onClose(engine.onRestored((e) => claimed(claims, e)))
  ctx.onClose(runaway.onEvent((e) => void post(runawayPayload(e, `alert_${randomUUID()}`))))
  ctx.onClose(async () => {
    closing = true
    standby?.close()
    const asking = late?.close()
    const dropped = await webhooks.close()
    // Those not sent stay for the next start, but those whose claim is let go below (another
    // instance, or the next start, claims and sends them) and those sent unasked (the next start
    // to read the crossing back claims it, and sends it if no instance has); one cut without an
    // answer goes (the webhook may have taken it).
    const notSent = new Set(dropped.filter((d) => !claimOf.has(d) && !unasked.has(d)))
    try {
      outbox.keep([...notSent].flatMap((d) => made.get(d) ?? []))
      outbox.forget([...unforgotten, ...[...made.keys()].filter((d) => !notSent.has(d)).map((d) => d.id)])
    } catch (err) {
      ctx.log.warn(`alerts: could not keep the alerts left undelivered for the next start: ${(err as Error).message}`)
    }
    if (!claims) return
    // A late claim won meanwhile is let go or settled with the rest (the ask waited for as an attempt is).
    await Promise.race([asking, new Promise((r) => setTimeout(r, CLOSE_WAIT_MS).unref())])
    await Promise.allSettled([...claiming])
    await claims.release([...unsent, ...dropped.flatMap((d) => claimOf.get(d) ?? [])])
    await claims.close()
  })
  const a = { webhooks, standingBy: () => standby?.size ?? 0 }
  installed.set(ctx, a)
  return a
}

/** Sends a test alert to every webhook; the deliveries as they stand once every first attempt has ended. */
export async function sendTestAlert(a: Alerts) {
  const { deliveries, firstAttempts } = a.webhooks.sendTracked(testPayload(`test_${randomUUID()}`, Date.now()))
  await firstAttempts
  return deliveries
}

/** Budget threshold alerts to webhooks (README: Alerts); desktop notifications are the desktop app's. */
export const alerts: Feature = (ctx) => {
  alertsOf(ctx)
}
