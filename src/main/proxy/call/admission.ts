import type { ServerResponse } from 'node:http'
import { errorBody, sendError } from '../../http/errors'
import { STATUS_CLIENT_CLOSED } from '../../ledger/record'
import { codexRefusalError } from '../codex-refusal'
import { forbiddenStatus } from '../forbidden-refusal'
import { geminiRefusalBody } from '../gemini-refusal'
import { opencodeRefusal } from '../opencode-refusal'
import type { Admission, Refusal } from '../gate'
import type { CallLifecycle } from './lifecycle'
import type { HttpCall } from './state'

/**
 * The JSON a refused call gets: the gate's own body, else the contract's error shape. Codex CLI
 * gets a budget or loop refusal in the form it stops on instead of retrying for hours
 * (../codex-refusal.ts); every other client gets the contract's shape. `client` is the client
 * recognised from what it sends, not the agent name recorded: Codex named otherwise by
 * `X-Burnrate-Agent` is still Codex. Gemini CLI gets them as a Google quota error it stops on
 * (../gemini-refusal.ts), with the contract's fields beside Google's. opencode gets them as a 403
 * it stops on (../opencode-refusal.ts), and so do Qwen Code and Cline (../forbidden-refusal.ts),
 * recorded as the 429 they are.
 */
export function refusalText(r: Refusal, client = ''): string {
  const body = r.body ?? errorBody('budget_exceeded', r.reason)
  if (client === 'codex') return JSON.stringify({ error: codexRefusalError(r.status, body, r.headers ?? {}) })
  if (client === 'gemini-cli') return JSON.stringify(geminiRefusalBody(r.status, body, r.headers ?? {}) ?? body)
  return JSON.stringify(body)
}

function gateFailed(life: CallLifecycle, s: HttpCall): false {
  s.status = 500
  s.error = 'gate_failed'
  sendError(s.res, 'internal', 'Burnrate could not check the budget for this call; it was not sent upstream.')
  life.finish(s)
  return false
}

function answer(life: CallLifecycle, s: HttpCall, admission: Admission): boolean {
  if (!admission.refuse) return true
  const res: ServerResponse = s.res
  const r = admission.refuse
  const body = r.body ?? errorBody('budget_exceeded', r.reason)
  const oc = s.ctx.client === 'opencode' ? opencodeRefusal(r.status, body, r.headers ?? {}) : undefined
  const text = oc ? JSON.stringify(oc.body) : refusalText(r, s.ctx.client)
  const sent = oc?.status ?? forbiddenStatus(s.ctx.client ?? '', r.status, body, r.headers ?? {})
  res.writeHead(sent, {
    ...r.headers,
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
  })
  res.end(text)
  s.status = r.status
  // Recorded as the refusal it is; the metrics and the span show the status the client got.
  if (sent !== r.status) s.clientStatus = sent
  s.error = r.reason
  s.refusedRule = r.rule
  s.admission = { settle: admission.settle }
  life.finish(s)
  return false
}

/**
 * True when the client of a call admitted after a wait (the database) is still there. One that
 * hung up meanwhile is not sent upstream, where it would be billed with no one to answer: it is
 * recorded as a client abort (cost 0, its reservation freed), as it is when the client leaves
 * during the call.
 */
function present(life: CallLifecycle, s: HttpCall): boolean {
  if (!s.res.destroyed) return true
  s.status = STATUS_CLIENT_CLOSED
  s.error = 'client_aborted'
  life.finish(s)
  return false
}

/**
 * Asks the gate whether an HTTP call may go upstream. When it may not (or the gate fails),
 * answers the client, records the call and returns false. A promise only when the gate needs
 * the database (shared budget state); otherwise decided in the same step.
 */
export function admitHttp(life: CallLifecycle, s: HttpCall): boolean | Promise<boolean> {
  let admission
  try {
    admission = life.admit(s)
  } catch {
    return gateFailed(life, s)
  }
  if (admission instanceof Promise) {
    return admission.then(
      (a) => answer(life, s, a) && present(life, s),
      () => gateFailed(life, s),
    )
  }
  return answer(life, s, admission)
}
