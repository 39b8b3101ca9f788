import { OutputText } from '../metering/output-text'
import { count, isObject, parseObject, type Usage } from '../metering/usage'
import type { UsageReader } from './openai-usage'
import type { CallShape, Meter, MeterResult, RequestInfo } from './types'

/**
 * Mistral's Conversations API (docs.mistral.ai/api, "Beta Conversations"; mistralai/client-python
 * `src/mistralai/client/conversations.py` and its models): `POST /v1/conversations` (start, with
 * `{model | agent_id, inputs, stream?}`), `POST /v1/conversations/{id}` (append) and `POST
 * /v1/conversations/{id}/restart` each run the model, answered with a `conversation.response`
 * (`{conversation_id, outputs: [{type: "message.output", model, content}…], usage: {prompt_tokens,
 * completion_tokens, total_tokens, connector_tokens, connectors}}`), or with `stream: true` with
 * events (`event: <type>`, data `{type, …}`): `conversation.response.started` (its
 * `conversation_id`), `message.output.delta` (`content`, `model`), tool and handoff events, and
 * `conversation.response.done` (the `usage`), or `conversation.response.error`. Recorded as
 * endpoint `conversations`; the reads (`GET`, `/history`, `/messages`) and the delete stay free.
 *
 * Its usage is Chat Completions' names; whatever of `total_tokens` neither `prompt_tokens` nor
 * `completion_tokens` holds (the tokens the built-in connectors fed the model, `connector_tokens`,
 * whose place in the counts Mistral does not document) is counted as input, never left out.
 */

const CONVERSATIONS = /^\/conversations(?:\/([^/]+?)(\/restart)?)?\/*$/

export const CONVERSATION = 'conversations'

/** The shape of a Conversations request that runs the model, or null. */
export function conversationsShape(req: RequestInfo): CallShape | null {
  if (req.method !== 'POST' || !req.path.startsWith('/conversations')) return null
  const m = CONVERSATIONS.exec(req.path)
  if (!m) return null
  // `/conversations/{id}` appends; `/conversations/{id}/restart` restarts from an entry.
  const body = isObject(req.body) ? req.body : undefined
  const model = typeof body?.model === 'string' ? body.model : typeof body?.agent_id === 'string' ? body.agent_id : ''
  return { endpoint: CONVERSATION, model, stream: body?.stream === true, billable: true }
}

/** A Conversations usage: Chat Completions' names, with what only `total_tokens` counts as input. */
function conversationUsage(raw: unknown, read: UsageReader): Usage | null {
  const u = read(raw)
  if (!u || !isObject(raw)) return u
  const beyond = count(raw.total_tokens) - u.input_tokens - u.output_tokens
  if (beyond > 0) u.input_tokens += beyond
  return u
}

/** The text of an output's `content`: a string, or chunks with `text`. */
function pushContent(text: OutputText, content: unknown): void {
  if (typeof content === 'string') text.push(content)
  else if (Array.isArray(content)) for (const c of content) pushContent(text, c)
  else if (isObject(content) && typeof content.text === 'string') text.push(content.text)
}

export class ConversationsMeter implements Meter {
  private usage: Usage | null = null
  private model: string | undefined
  private id: string | undefined
  private complete = false
  private failure: string | undefined
  private text = new OutputText()

  constructor(private readonly read: UsageReader) {}

  private outputs(list: unknown): void {
    if (!Array.isArray(list)) return
    for (const o of list) {
      if (!isObject(o)) continue
      if (typeof o.model === 'string' && o.model) this.model = o.model
    }
  }

  event(name: string, data: string): void {
    const ev = parseObject(data)
    if (!ev) return
    const type = typeof ev.type === 'string' ? ev.type : name
    if (typeof ev.conversation_id === 'string' && ev.conversation_id) this.id = ev.conversation_id
    if (typeof ev.model === 'string' && ev.model) this.model = ev.model
    if (type === 'message.output.delta') pushContent(this.text, ev.content)
    else if (type === 'function.call.delta' && typeof ev.arguments === 'string') this.text.push(ev.arguments)
    else if (type === 'conversation.response.done') {
      this.complete = true
      this.usage = conversationUsage(ev.usage, this.read)
    } else if (type === 'conversation.response.error') {
      this.failure = typeof ev.message === 'string' ? ev.message : 'conversation.response.error'
    }
  }

  json(body: unknown): void {
    this.complete = true
    if (!isObject(body)) return
    if (typeof body.conversation_id === 'string' && body.conversation_id) this.id = body.conversation_id
    this.outputs(body.outputs)
    this.usage = conversationUsage(body.usage, this.read)
  }

  result(): MeterResult {
    const r: MeterResult = { usage: this.usage, model: this.model, responseId: this.id, complete: this.complete }
    if (this.failure) r.error = this.failure.length > 100 ? this.failure.slice(0, 100) : this.failure
    if (!this.usage) {
      r.outputText = this.text.join('')
      r.outputScale = this.text.scale
    }
    return r
  }
}
