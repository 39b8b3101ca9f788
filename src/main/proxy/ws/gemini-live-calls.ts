import { performance } from 'node:perf_hooks'
import type { IncomingHttpHeaders } from 'node:http'
import { parseObject, isObject } from '../../metering/usage'
import { GeminiLiveMeter, setupModel } from '../../providers/gemini-live'
import type { Attributors } from '../call/context'
import { describeCall } from '../call/context'
import type { CallLifecycle } from '../call/lifecycle'
import { type CallState, newCallState } from '../call/state'
import type { Route } from '../routes'
import { TOOL_CALL, TURN_COMPLETE, USAGE, beginsMessage, contentKind } from './gemini-live-messages'
import type { ClientVerdict, SocketCalls } from './socket-calls'
import { duplicatedKey, watched } from './duplicate-keys'
import { type ClosedBy, abandoned } from './socket-end'
import { GeminiLiveTurnGate } from './gemini-live-turns'

/**
 * Where the turn held stands: `open`, the model generating (or waiting for a tool's answer); `over`,
 * its generation ended before any `turnComplete` (which may still come, with its usage) by the
 * user's speech (`interrupted`) or by a `toolCall` that carried its usage; `ended`, its
 * `turnComplete` read while its usage is awaited.
 */
type Phase = 'open' | 'over' | 'ended'

/** The keys of a `setup` frame (and of its `setup`) whose second naming is looked for: what its turns are priced by. */
const SETUP_KEYS = watched(['setup', 'model'])

/**
 * The calls on one Gemini Live API socket (../../providers/gemini-live.ts): each model turn is one
 * call, begun at its first server message that is the model's (its output, a tool call; not a
 * transcription, which Google sends in no order with the turn) and recorded at its `turnComplete` with the `usageMetadata` it carries (the last one
 * the turn sent, should it send more than one: each is the turn's, not the session's running
 * total). A turn whose usage comes in a message after its `turnComplete` is recorded at that
 * message, or when the next turn begins. A turn the user interrupted, or one whose `toolCall`
 * carried its usage, is recorded when the next turn (the answer after the `toolResponse`) begins,
 * if no `turnComplete` came first, with the usage it reported (none: estimated).
 * Turns are begun by the server (voice activity, or the client's content) and asked for by no frame
 * the relay could hold back: the socket's upgrade is checked by the budgets (./realtime-upgrade.ts),
 * and so are the client's frames after which the server starts a turn (./gemini-live-turns.ts).
 *
 * The model is the one the client's first message, its `setup`, names. Frames are not parsed but
 * for that first client message and the server messages that hold `usageMetadata`,
 * `turnComplete` or `interrupted`; the audio and video frames both ways are only searched for
 * those bytes (./gemini-live-messages.ts).
 */
export class GeminiLiveSocketCalls implements SocketCalls {
  private model = ''
  /** Whether the client's first frame (its `setup`) was read. */
  private setupRead = false
  /** The turn under way, or over (interrupted) or ended while its `turnComplete` or usage is awaited. */
  private turn: CallState | null = null
  private phase: Phase = 'open'
  /** The turn asked for a tool (`toolCall`) and waits for the client's `toolResponse`: its silence is the client's. */
  private toolAsked = false
  /** The `usageMetadata` (its text) of the turn under way, and of the turn last recorded. */
  private usageText = ''
  private billedText = ''
  closedBy: ClosedBy | null = null
  /**
   * The turn under way (or over, or ended, its usage awaited) when the client closed: held until
   * the upstream answers the close, so the usage it sends meanwhile is the turn's bill; else
   * `release` records it as it stands.
   */
  private leaving: CallState | null = null
  /** Where the held turn stood at the close; `ended` once its `turnComplete` came (before the close, or after it). */
  private leavingPhase: Phase = 'open'
  private readonly gate: GeminiLiveTurnGate

  constructor(
    private readonly life: CallLifecycle,
    private readonly route: Route,
    private readonly headers: IncomingHttpHeaders,
    private readonly who: Attributors,
  ) {
    this.gate = new GeminiLiveTurnGate(life, () => this.call())
  }

  fromClient(data: Buffer): ClientVerdict | Promise<ClientVerdict> {
    if (this.toolAsked && data.includes('"toolResponse"')) this.toolAsked = false
    if (this.setupRead) return this.gate.fromClient(data)
    this.setupRead = true
    // (The setup comes first; it is small. A client that sends another first names no model.)
    // (Or spells its key with a JSON escape, `"set\u0075p"`, as the upstream's parser reads it: once per socket.)
    if (!data.includes('"setup"') && !data.includes('\\u')) return null
    const text = data.toString('utf8')
    const setup = parseObject(text)
    // Its model (or the setup) named twice: the upstream's parser may read the one JSON.parse did
    // not, and the turns would be priced at a model it did not run. Refused as Google refuses a
    // setup it cannot take: the socket closed with 1007, the setup not sent.
    const twice = setup ? duplicatedKey(text, SETUP_KEYS, 2) : null
    if (twice !== null) return { close: 1007, reason: `Burnrate refused a setup naming "${twice}" twice; it was not sent upstream` }
    this.model = setupModel(setup)
    return null
  }

  fromUpstream(data: Buffer): void {
    if (this.closedBy) {
      // Once the socket's end recorded its turn, a message still in flight would record it again;
      // one for the turn held after the client's close is its bill.
      if (this.leaving) this.leftMessage(data)
      return
    }
    const usage = data.includes(USAGE)
    const done = data.includes(TURN_COMPLETE)
    const kind = contentKind(data)
    if (!usage && !done && !kind.interrupted) {
      // Content (or a tool call) of a turn: the first begins one. An ended or interrupted turn is recorded so.
      // (An audio frame's `serverContent` is found at its start: the search for a tool call ends there.)
      const tool = !kind.content && data.includes(TOOL_CALL)
      if (this.turn && this.phase === 'open') {
        // The model goes on (content), or asks for a tool; other messages (a resumption update) change neither.
        if (kind.content || tool) this.toolAsked = tool
        return
      }
      // Only the model's output begins a turn: a transcription (of the model's speech or of the
      // user's it answers) has no order with the turn, can come after its end, and is no turn of its own.
      if (!tool && !kind.output) return
      if (this.turn) this.finish()
      this.turn = this.begin()
      this.toolAsked = tool
      return
    }
    const m = parseObject(data.toString('utf8'))
    if (!m) return
    const sc = isObject(m.serverContent) ? m.serverContent : null
    const complete = done && sc?.turnComplete === true
    const begins = beginsMessage(m)
    // An ended turn waits for its usage (the next message that has some is its bill): one without
    // is recorded without it once the next turn begins or ends; a message that does neither (the
    // transcription of its speech, coming late) leaves it waiting. An interrupted one waits for
    // its turnComplete (and usage) until the model's next output begins the next turn.
    if (this.turn && this.phase === 'ended' && !usage) {
      if (!begins && !complete) return
      this.finish()
    } else if (this.turn && this.phase === 'over' && begins) this.finish()
    // With no turn under way, a message that begins none bills only usage not yet billed: the usage
    // of the turn just recorded sent again (repeated totals) would bill it twice (and hold the
    // socket open as mid-turn), and a bare turnComplete has nothing to bill.
    if (!this.turn && !begins && (!usage || JSON.stringify(m.usageMetadata) === this.billedText)) return
    this.turn ??= this.begin()
    const meter = meterOf(this.turn)
    if (usage) {
      try {
        if (meter.usageFrom(m)) this.usageText = JSON.stringify(m.usageMetadata)
      } catch {
        // A message we cannot read never stops the relay.
      }
    }
    if (complete) {
      meter.completed()
      this.phase = 'ended'
    } else if (sc?.interrupted === true) {
      // The user spoke over the model: its generation is over (a turn the server ended, not cut).
      if (this.phase === 'open') {
        meter.completed()
        this.phase = 'over'
        this.toolAsked = false
      }
    } else if (isObject(m.toolCall)) {
      this.toolAsked = true
      // A toolCall that carries its usage ends the generation that asked for the tool: that usage
      // is its bill, and the model's answer after the toolResponse is a generation of its own,
      // which reads the conversation again (the tool's result with it) and is billed so.
      if (usage && meter.hasUsage() && this.phase === 'open') {
        meter.completed()
        this.phase = 'over'
      }
    } else if (sc) this.toolAsked = false
    if (this.phase === 'ended' && meter.hasUsage()) this.finish()
  }

  /** A call of this socket, begun now: its prompt is the session's conversation, not a frame, so its body names the model alone. */
  private call(): CallState {
    const { info, ctx } = describeCall(this.route, 'POST', this.headers, { model: this.model }, 0, Date.now(), this.who)
    return this.life.begin(newCallState(this.route, ctx, info, performance.now()))
  }

  /** A turn, begun now: answered 200 and metered from its server messages. */
  private begin(): CallState {
    const s = this.call()
    s.streamed = true
    s.status = 200
    s.upstreamStatus = 200
    s.responseStarted = true
    s.meter = new GeminiLiveMeter()
    this.phase = 'open'
    this.toolAsked = false
    this.usageText = ''
    return s
  }

  private finish(): void {
    const s = this.turn
    this.turn = null
    this.phase = 'open'
    if (this.usageText) this.billedText = this.usageText
    this.usageText = ''
    if (s) {
      this.life.finish(s)
      this.gate.arm()
    }
  }

  openState(): 'none' | 'waiting' | 'streaming' {
    return this.turn && this.phase === 'open' && !this.toolAsked ? 'streaming' : 'none'
  }

  /** The upstream went silent past its time limit mid-turn: 504 `upstream_stalled`, estimated past what it reported. */
  timedOut(): void {
    this.endAll('upstream', (s) => {
      s.status = 504
      s.error = 'upstream_stalled'
    })
  }

  closed(by: ClosedBy): void {
    if (by === 'client' && this.closedBy === null && this.turn) {
      this.closedBy = 'client'
      // A turn under way was abandoned by the client; one that ended (or was interrupted) before keeps its status.
      if (this.phase === 'open') abandoned(this.turn, 'client')
      this.leaving = this.turn
      this.leavingPhase = this.phase
      this.turn = null
      this.phase = 'open'
      return
    }
    if (by !== 'client') this.release()
    this.endAll(by, (s) => abandoned(s, by))
  }

  /** A server message after the client's close, for the held turn: its usage, and its end. */
  private leftMessage(data: Buffer): void {
    const s = this.leaving
    if (!s || (!data.includes(USAGE) && !data.includes(TURN_COMPLETE))) return
    const m = parseObject(data.toString('utf8'))
    if (!m) return
    const meter = meterOf(s)
    try {
      if (data.includes(USAGE)) meter.usageFrom(m)
    } catch {
      // A message we cannot read never stops the relay.
    }
    // Its end, which the client never got: the turn keeps its 499, with the usage reported.
    if (isObject(m.serverContent) && m.serverContent.turnComplete === true) this.leavingPhase = 'ended'
    if (this.leavingPhase === 'ended' && meter.hasUsage()) this.release()
  }

  /** The upstream answered the client's close (or did not in time): the held turn is recorded as it stands, cut short if it never ended. */
  release(): void {
    const s = this.leaving
    if (!s) return
    this.leaving = null
    if (this.leavingPhase === 'open') meterOf(s).cutShort()
    this.life.finish(s)
  }

  private endAll(by: ClosedBy, cut: (s: CallState) => void): void {
    this.closedBy ??= by
    const s = this.turn
    if (!s) return
    // A turn that ended or was interrupted (its usage never came) ended as it should: recorded as it is.
    if (this.phase === 'open') {
      cut(s)
      meterOf(s).cutShort()
    }
    this.finish()
  }
}

function meterOf(s: CallState): GeminiLiveMeter {
  return s.meter as GeminiLiveMeter
}
