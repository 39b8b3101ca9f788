import { performance } from 'node:perf_hooks'
import type { IncomingMessage } from 'node:http'
import type { Duplex } from 'node:stream'
import { describeCall } from '../call/context'
import { type CallState, newCallState } from '../call/state'
import type { Refusal } from '../gate'
import { checkBudgets, recordGateFailed, recordRefusal } from './budget-check'
import type { Route } from '../routes'
import { addOfferedKeys, modelOfQuery, modelParams, offeredKeys, withProtocolKey } from './realtime-frames'
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
  // Its model named twice (`?model=a&model=b`, or Azure's `deployment`): the budgets read the
  // first, the upstream may run the other. Refused, as a frame naming a key twice is (./duplicate-keys.ts).
  const provider = route.upstream.provider.name
  if (route.query.includes('=') && modelParams(provider).some((k) => new URLSearchParams(route.query).getAll(k).length > 1)) {
    answerError(socket, 400, 'invalid_request', 'Burnrate refuses a socket whose query names its model more than once (the provider may run another than the budgets would check); it was not opened upstream.')
    return false
  }
  const { info, ctx } = describeCall(route, 'POST', withProtocolKey(req.headers), { model: modelOfQuery(route.query, provider) }, 0, Date.now(), opts.who)
  addOfferedKeys(ctx, offeredKeys(req.headers))
  const s = opts.life.begin(newCallState(route, ctx, info, performance.now()))
  let r: Refusal | null | Promise<Refusal | null>
  try {
    r = checkBudgets(opts.life, s)
  } catch {
    return failed(opts, s, socket)
  }
  if (r instanceof Promise) return r.then((x) => decided(opts, s, socket, x), () => failed(opts, s, socket))
  return decided(opts, s, socket, r)
}

function decided(opts: WebSocketRelayOptions, s: CallState, socket: Duplex, r: Refusal | null): boolean {
  if (!r) return true
  recordRefusal(opts.life, s, r)
  answer(socket, r.status, { ...r.headers, 'content-type': 'application/json; charset=utf-8' }, Buffer.from(JSON.stringify(r.body)))
  return false
}

function failed(opts: WebSocketRelayOptions, s: CallState, socket: Duplex): false {
  recordGateFailed(opts.life, s)
  answerError(socket, 500, 'internal', 'Burnrate could not check the budget for this socket; it was not opened upstream.')
  return false
}
