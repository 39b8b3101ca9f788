import type { CallLifecycle } from '../call/lifecycle'
import type { CallState } from '../call/state'
import type { Refusal } from '../gate'
import { REFUSED_CLOSE, checkBudgets, closeReason, recordGateFailed, recordRefusal } from './budget-check'
import type { ClientVerdict } from './socket-calls'

/**
 * The bytes of a Gemini Live client message after which the server starts a billed turn: content
 * the client ends its turn with (`clientContent`), a tool's result (`toolResponse`: the model's
 * answer to it is a generation of its own), each in Google's JSON spelling and in the proto field
 * names its parser takes as well; a `\u` escape may spell any of them (audio's base64 never holds one).
 */
const STARTS_TURN = ['"clientContent"', '"client_content"', '"toolResponse"', '"tool_response"', '\\u']
/** Realtime input: its audio (and video) chunks stream all the time, and the server's voice activity detection starts a turn... */
const REALTIME_INPUT = ['"realtimeInput"', '"realtime_input"']
/** ...but its text, the end of the user's activity (manual activity detection) or of the audio stream starts one at once. */
const INPUT_ENDS = ['"text"', '"activityEnd"', '"activity_end"', '"audioStreamEnd"', '"audio_stream_end"']

const holds = (data: Buffer, marks: readonly string[]) => marks.some((m) => data.includes(m))

/**
 * The budgets' check of a Gemini Live socket's turns (./gemini-live-calls.ts). The server starts
 * each turn and no frame asks for it as a `response.create` does, so the frames after which it
 * starts one are checked instead, as a call of the socket's key and model would be admitted: a
 * `clientContent` or `toolResponse`, a realtime input's text or end, and the first realtime input
 * after each turn recorded (audio that may be the next turn's: a turn the socket's own turns took
 * over a limit stops the microphone's next turn). An admitted check takes nothing with it (the
 * turns are recorded, and counted, one by one: ./budget-check.ts) and the frame goes on, unread;
 * a refused one is recorded as a refusal (429, $0, naming the rule), the frame is not sent, and
 * the socket is closed 1011 with a reason naming the rule, as Google closes one over its quota (a
 * Gemini Live socket reports errors by its close; the socket's upgrade is refused the same key's
 * HTTP 429 from then on). Nothing the client sends after a refusal goes upstream.
 */
export class GeminiLiveTurnGate {
  /** The next realtime input is checked: the first after the setup, and after each turn recorded. */
  private armed = true
  /** A frame was refused: the socket is closing, and nothing more goes upstream. */
  private shut = false

  constructor(
    private readonly life: CallLifecycle,
    /** A call of the socket (its key, model and attribution), begun, to check. */
    private readonly call: () => CallState,
  ) {}

  /** A turn was recorded: the realtime input that follows may start the next one. */
  arm(): void {
    this.armed = true
  }

  /** A client message after the setup: null to send it on, else what the relay does instead. */
  fromClient(data: Buffer): ClientVerdict | Promise<ClientVerdict> {
    if (this.shut) return false
    if (!holds(data, STARTS_TURN) && !(holds(data, REALTIME_INPUT) && (this.armed || holds(data, INPUT_ENDS)))) return null
    const s = this.call()
    let r: Refusal | null | Promise<Refusal | null>
    try {
      r = checkBudgets(this.life, s)
    } catch {
      return this.failed(s)
    }
    if (r instanceof Promise) return r.then((x) => this.decided(s, x), () => this.failed(s))
    return this.decided(s, r)
  }

  private decided(s: CallState, r: Refusal | null): ClientVerdict {
    if (!r) {
      this.armed = false
      return this.shut ? false : null
    }
    recordRefusal(this.life, s, r)
    return this.close(`${r.reason} (${r.rule ? `budget rule "${r.rule}"` : 'Burnrate'}): this turn was refused and not sent upstream`)
  }

  private failed(s: CallState): ClientVerdict {
    recordGateFailed(this.life, s)
    return this.close('Burnrate could not check the budget for this turn; it was not sent upstream')
  }

  private close(reason: string): ClientVerdict {
    this.shut = true
    return { close: REFUSED_CLOSE, reason: closeReason(reason) }
  }
}
