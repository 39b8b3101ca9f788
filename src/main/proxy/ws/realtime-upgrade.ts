import { performance } from 'node:perf_hooks'
import type { IncomingMessage } from 'node:http'
import type { Duplex } from 'node:stream'
import { errorBody } from '../../http/errors'
import { describeCall } from '../call/context'
import { type CallState, newCallState } from '../call/state'
import type { Admission, Refusal } from '../gate'
import type { Route } from '../routes'
import { addOfferedKeys, modelOfQuery, offeredKeys, withProtocolKey } from './realtime-frames'
import type { WebSocketRelayOptions } from './relay-options'
import { answer, answerError } from './upgrade-answer'

/**
 * A Realtime socket's upgrade, asked of the budgets before the upstream is. With server VAD the
 * server starts each response by itself, and no frame of the client's asks for it, so the socket
 * is the one thing left to refuse: a key the budgets refuse a response now (over a `block` limit,
 * or its per-minute rate) is refused the socket, answered as an HTTP call's refusal is and recorded
 * so (429, $0). An admitted check takes nothing back with it: no request counted, nothing
 * reserved (the socket's responses are gated and recorded one by one). True when the upgrade may
 * go on; false when it was answered here. A Gemini Live socket's upgrade is checked the same way (its
 * turns too are started by the server: ./gemini-live-calls.ts); it has no `model` query, nor
 * subprotocol keys, so it is checked as the key's call of no model.
 */
export function admitUpgrade(opts: WebSocketRelayOptions, req: IncomingMessage, socket: Duplex, route: Route): boolean | Promise<boolean> {
  // Its model named twice (`?model=a&model=b`): the budgets read the first, the upstream may run
  // the other. Refused, as a frame naming a key twice is (./duplicate-keys.ts).
  if (route.query.includes('=') && new URLSearchParams(route.query).getAll('model').length > 1) {
    answerError(socket, 400, 'invalid_request', 'Burnrate refuses a socket whose query names its model more than once (the provider may run another than the budgets would check); it was not opened upstream.')
    return false
  }
  const { info, ctx } = describeCall(route, 'POST', withProtocolKey(req.headers), { model: modelOfQuery(route.query) }, 0, Date.now(), opts.who)
  addOfferedKeys(ctx, offeredKeys(req.headers))
  const s = opts.life.begin(newCallState(route, ctx, info, performance.now()))
  let a: Admission | Promise<Admission>
  try {
    a = opts.life.admit(s)
  } catch {
    return failed(opts, s, socket)
  }
  if (a instanceof Promise) return a.then((x) => decided(opts, s, socket, x), () => failed(opts, s, socket))
  return decided(opts, s, socket, a)
}

function decided(opts: WebSocketRelayOptions, s: CallState, socket: Duplex, a: Admission): boolean {
  if (a.refuse) {
    s.admission = { settle: a.settle }
    return refused(opts, s, socket, a.refuse)
  }
  // Only a check: what admitting it counted or reserved is let go, as for a call never sent.
  a.afterSend?.()
  a.unsent?.()
  try {
    a.settle?.(0)
  } finally {
    opts.life.leave()
  }
  return true
}

function failed(opts: WebSocketRelayOptions, s: CallState, socket: Duplex): false {
  const body = errorBody('internal', 'Burnrate could not check the budget for this socket; it was not opened upstream.')
  return refused(opts, s, socket, { status: 500, headers: {}, body, reason: 'gate_failed' })
}

function refused(opts: WebSocketRelayOptions, s: CallState, socket: Duplex, r: Refusal): false {
  s.status = r.status
  s.error = r.reason
  s.refusedRule = r.rule
  opts.life.finish(s)
  answer(socket, r.status, { ...r.headers, 'content-type': 'application/json; charset=utf-8' }, Buffer.from(JSON.stringify(r.body)))
  return false
}
