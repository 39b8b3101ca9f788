import type { ServerResponse } from 'node:http'
import { errorBody, sendError } from '../../http/errors'
import { codexRefusalError } from '../codex-refusal'
import type { Refusal } from '../gate'
import type { CallLifecycle } from './lifecycle'
import type { HttpCall } from './state'

/**
 * The JSON a refused call gets: the gate's own body, else the contract's error shape. Codex CLI
 * gets a budget or loop refusal in the form it stops on instead of retrying for hours
 * (../codex-refusal.ts); every other client gets the contract's shape.
 */
export function refusalText(r: Refusal, agent = ''): string {
  const body = r.body ?? errorBody('budget_exceeded', r.reason)
  if (agent === 'codex') return JSON.stringify({ error: codexRefusalError(r.status, body, r.headers ?? {}) })
  return JSON.stringify(body)
}

/**
 * Asks the gate whether an HTTP call may go upstream. When it may not (or the gate fails),
 * answers the client, records the call and returns false.
 */
export function admitHttp(life: CallLifecycle, s: HttpCall): boolean {
  const res: ServerResponse = s.res
  let admission
  try {
    admission = life.admit(s)
  } catch {
    s.status = 500
    s.error = 'gate_failed'
    sendError(res, 'internal', 'Burnrate could not check the budget for this call; it was not sent upstream.')
    life.finish(s)
    return false
  }
  if (admission.refuse) {
    const r = admission.refuse
    const text = refusalText(r, s.ctx.agent)
    res.writeHead(r.status, {
      ...r.headers,
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(text),
    })
    res.end(text)
    s.status = r.status
    s.error = r.reason
    s.admission = { settle: admission.settle }
    life.finish(s)
    return false
  }
  return true
}
