import type { CallLifecycle } from '../call/lifecycle'
import type { CallState } from '../call/state'
import type { Admission, Refusal } from '../gate'

/**
 * A socket's check of the budgets where the provider, not a frame the relay could hold, starts the
 * calls: a Realtime or Gemini Live socket's upgrade (./realtime-upgrade.ts), a Gemini Live frame
 * after which the server starts a turn (./gemini-live-turns.ts), a response a Realtime server
 * starts by itself (./realtime-started.ts). `s` stands for such a call (the socket's key, model and
 * attribution), begun; the budgets are asked whether they would admit it now. Admitted, the check
 * takes nothing with it: no request counted, nothing reserved (the calls the server starts are
 * recorded, and counted, one by one), and `s` is let go unrecorded: null. Refused, the refusal is
 * returned and `s` waits for `recordRefusal` (or `dropRefusal`). Throws (or rejects: the gate
 * waits on the database) when the gate fails; `s` then waits for `recordGateFailed`.
 */
export function checkBudgets(life: CallLifecycle, s: CallState): Refusal | null | Promise<Refusal | null> {
  const a = life.admit(s)
  return a instanceof Promise ? a.then((x) => checked(life, s, x)) : checked(life, s, a)
}

function checked(life: CallLifecycle, s: CallState, a: Admission): Refusal | null {
  if (a.refuse) {
    s.admission = { settle: a.settle }
    return a.refuse
  }
  // Only a check: what admitting it counted or reserved is let go, as for a call never sent.
  a.afterSend?.()
  a.unsent?.()
  try {
    a.settle?.(0)
  } finally {
    life.leave()
  }
  return null
}

/** A refused check, recorded as the refused call it stood for (its status and reason, the rule that refused it, $0). */
export function recordRefusal(life: CallLifecycle, s: CallState, r: Refusal): void {
  s.status = r.status
  s.error = r.reason
  s.refusedRule = r.rule
  life.finish(s)
}

/** A refused check let go unrecorded: what it held is freed. */
export function dropRefusal(life: CallLifecycle, s: CallState): void {
  try {
    s.admission.settle?.(0)
  } finally {
    life.leave()
  }
}

/** A check the gate could not make, recorded as such a call is: 500 `gate_failed`, $0. */
export function recordGateFailed(life: CallLifecycle, s: CallState): void {
  s.status = 500
  s.error = 'gate_failed'
  life.finish(s)
}

/**
 * The close code of a socket Burnrate closes for a budget refusal: 1011, as Google closes a Gemini
 * Live socket over its quota (RESOURCE_EXHAUSTED; ./gemini-live-turns.ts), and so a Realtime one
 * whose key stays over its limit (./realtime-started.ts): a code other than 1000 or 1001 reads as
 * an error, not the conversation's end, to the clients that look at it (the OpenAI Python SDK's
 * and the Agents SDK's Realtime sockets end quietly on those two, and report any other).
 */
export const REFUSED_CLOSE = 1011

/** The most a WebSocket close frame's reason may hold, in UTF-8 bytes. */
const MAX_REASON_BYTES = 123

/** `text` cut to fit a close frame's reason (whole characters, an ellipsis where cut). */
export function closeReason(text: string): string {
  if (Buffer.byteLength(text) <= MAX_REASON_BYTES) return text
  let out = ''
  for (const ch of text) {
    if (Buffer.byteLength(out + ch + '…') > MAX_REASON_BYTES) break
    out += ch
  }
  return out + '…'
}
