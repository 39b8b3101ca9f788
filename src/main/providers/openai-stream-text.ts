import { OutputText } from '../metering/output-text'
import { isObject, parseObject } from '../metering/usage'
import { TEXT_DELTAS } from './openai-stream-events'

/**
 * The text an OpenAI stream streamed, kept for one use: to estimate its output should it end
 * without its usage (a cut stream, a server that sends none). Its events are kept as they came,
 * unparsed, and read only when the estimate needs them; and the text of a Chat Completions chunk's
 * choices (`choicesText`, which Bedrock's meter reads too).
 */

/** Characters of unparsed deltas and chunks a stream keeps before it reads them into its text (see `StreamText.deltas`). */
const MAX_PENDING_DELTA_CHARS = 1_000_000

/** A stream's text, for the estimate of its output (`OpenAIMeter`'s). */
export class StreamText {
  private readonly text = new OutputText()
  /** A choice gave its `finish_reason`: the generation ended. */
  finished = false
  /**
   * A Responses stream's text deltas (most of its events), or a Chat Completions stream's chunks
   * without usage (see `OpenAIMeter.deferrable`), kept as they came, unparsed: their text is only
   * read to estimate a stream that ends without its usage. So a stream that ends normally parses
   * none of them. Past MAX_PENDING_DELTA_CHARS they are read into the text (bounded there) and let
   * go: memory stays flat, and the text exact.
   */
  private deltas: string[] = []
  private deltaChars = 0

  /** Keeps an event's data unparsed (see `deltas`), reading what is kept into the text past MAX_PENDING_DELTA_CHARS. */
  keep(data: string): void {
    this.deltas.push(data)
    this.deltaChars += data.length
    if (this.deltaChars > MAX_PENDING_DELTA_CHARS) this.read()
  }

  /** Reads the kept text deltas and chunks into the text, in the order they came, and lets them go. */
  read(): void {
    const kept = this.deltas
    this.drop()
    for (const data of kept) {
      const ev = parseObject(data)
      if (!ev) continue
      if (TEXT_DELTAS.has(ev.type as string)) {
        if (typeof ev.delta === 'string') this.text.push(ev.delta)
      } else if (Array.isArray(ev.choices)) this.chunk(ev.choices)
    }
  }

  /** Lets the kept deltas and chunks go unread (a usage came: the estimate is not needed). */
  drop(): void {
    if (this.deltas.length === 0) return
    this.deltas = []
    this.deltaChars = 0
  }

  /** A text delta's text, read from its parsed event. */
  push(delta: string): void {
    this.text.push(delta)
  }

  /** A chunk's choices' text (`choicesText`); a choice with a finish reason ends the generation. */
  chunk(choices: unknown[]): void {
    if (choicesText(choices, this.text)) this.finished = true
  }

  /** The text read (`OutputText.join`). */
  join(): string {
    return this.text.join('')
  }

  /** How much longer the whole text was than the part kept (`OutputText.scale`). */
  get scale(): number | undefined {
    return this.text.scale
  }
}

/**
 * A Chat Completions chunk's choices' text, for the estimate: content, refusal, reasoning, tool
 * calls' and legacy function calls' names and arguments; legacy Completions' text. Pushed into
 * `text`; true when a choice has a finish reason. Also read by Bedrock's meter, for an
 * OpenAI-format model's InvokeModel stream.
 */
export function choicesText(choices: unknown[], text: { push(s: string): void }): boolean {
  let finished = false
  for (const c of choices as any[]) {
    if (typeof c?.finish_reason === 'string') finished = true
    const d = c?.delta
    if (isObject(d)) {
      if (typeof d.content === 'string') text.push(d.content)
      else if (Array.isArray(d.content)) contentChunksText(d.content, text)
      if (typeof d.refusal === 'string') text.push(d.refusal)
      // Reasoning text, billed as output: DeepSeek's and vLLM's reasoning_content, OpenRouter's
      // and Groq's reasoning (OpenRouter sends the same text again in reasoning_details, read
      // only when neither is there).
      const reasoning = typeof d.reasoning_content === 'string' ? d.reasoning_content : typeof d.reasoning === 'string' ? d.reasoning : null
      if (reasoning !== null) text.push(reasoning)
      else if (Array.isArray(d.reasoning_details)) {
        for (const r of d.reasoning_details) if (typeof r?.text === 'string') text.push(r.text)
      }
      // The legacy `functions` API's call, streamed as tool calls are.
      if (isObject(d.function_call)) {
        if (typeof d.function_call.name === 'string') text.push(d.function_call.name)
        if (typeof d.function_call.arguments === 'string') text.push(d.function_call.arguments)
      }
      if (Array.isArray(d.tool_calls)) {
        for (const tc of d.tool_calls) {
          const fn = tc?.function
          if (typeof fn?.name === 'string') text.push(fn.name)
          if (typeof fn?.arguments === 'string') text.push(fn.arguments)
        }
      }
    } else if (typeof c?.text === 'string') {
      text.push(c.text)
    }
  }
  return finished
}

/**
 * A delta's `content` given as a list of content chunks, as Mistral's reasoning models stream it
 * while they think (docs.mistral.ai/capabilities/reasoning): a ThinkChunk's text
 * (`{type: "thinking", thinking: [{type: "text", text}]}`, billed as output) and text chunks.
 */
function contentChunksText(parts: unknown[], text: { push(s: string): void }): void {
  for (const p of parts as any[]) {
    if (typeof p?.text === 'string') text.push(p.text)
    else if (Array.isArray(p?.thinking)) {
      for (const t of p.thinking) if (typeof t?.text === 'string') text.push(t.text)
    } else if (typeof p?.thinking === 'string') text.push(p.thinking)
  }
}
