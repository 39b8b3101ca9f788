import { count, emptyUsage, isObject, type Usage } from '../metering/usage'
import type { CallShape, Meter, MeterResult, Provider, RequestInfo } from './types'

/**
 * OpenAI usage, either naming: Chat Completions / Completions / Embeddings
 * (`prompt_tokens`, `completion_tokens`) or Responses (`input_tokens`, `output_tokens`).
 * Cached tokens are part of the prompt count and reasoning tokens part of the output count.
 */
export function openaiUsage(u: unknown): Usage | null {
  if (!isObject(u)) return null
  const usage = emptyUsage()
  const inDetails = u.prompt_tokens_details ?? u.input_tokens_details
  const outDetails = u.completion_tokens_details ?? u.output_tokens_details
  usage.input_tokens = count(u.prompt_tokens ?? u.input_tokens)
  usage.output_tokens = count(u.completion_tokens ?? u.output_tokens)
  if (isObject(inDetails)) usage.cache_read_tokens = count(inDetails.cached_tokens)
  if (isObject(outDetails)) usage.reasoning_tokens = count(outDetails.reasoning_tokens)
  return usage
}

export function openaiEndpoint(path: string): string {
  const p = path.replace(/\/+$/, '')
  if (p === '/chat/completions') return 'chat.completions'
  if (p === '/responses') return 'responses'
  if (p === '/completions') return 'completions'
  if (p === '/embeddings') return 'embeddings'
  if (p.startsWith('/images/')) return 'images'
  if (p.startsWith('/audio/')) return 'audio'
  return 'other'
}

const BILLABLE = new Set(['chat.completions', 'responses', 'completions', 'embeddings', 'images', 'audio'])

export function inspectOpenAI(req: RequestInfo): CallShape {
  const endpoint = req.method === 'POST' ? openaiEndpoint(req.path) : 'other'
  const body = isObject(req.body) ? req.body : undefined
  return {
    endpoint,
    model: typeof body?.model === 'string' ? body.model : '',
    stream: body?.stream === true,
    billable: BILLABLE.has(endpoint),
  }
}

const TERMINAL = new Set(['response.completed', 'response.failed', 'response.incomplete'])

/** Meters Chat Completions, Completions, Responses and Embeddings, JSON or SSE. */
export class OpenAIMeter implements Meter {
  private usage: Usage | null = null
  private model: string | undefined
  private text: string[] = []

  event(name: string, data: string): void {
    if (data === '[DONE]') return
    let ev: any
    try {
      ev = JSON.parse(data)
    } catch {
      return
    }
    if (!isObject(ev)) return
    const type = typeof ev.type === 'string' ? ev.type : name
    if (type.startsWith('response.')) {
      // Responses API: usage only arrives in the terminal event.
      const r = ev.response
      if (isObject(r)) {
        if (typeof r.model === 'string' && r.model) this.model = r.model
        if (r.usage) this.usage = openaiUsage(r.usage) ?? this.usage
        else if (TERMINAL.has(type)) this.usage ??= emptyUsage() // e.g. response.failed: nothing was billed
      }
      if (type === 'response.output_text.delta' && typeof ev.delta === 'string' && !this.usage) this.text.push(ev.delta)
      if (type === 'response.function_call_arguments.delta' && typeof ev.delta === 'string' && !this.usage) this.text.push(ev.delta)
      return
    }
    // Chat Completions (and legacy Completions) chunks.
    if (typeof ev.model === 'string' && ev.model) this.model = ev.model
    if (ev.usage) this.usage = openaiUsage(ev.usage) ?? this.usage
    if (!this.usage && Array.isArray(ev.choices)) {
      for (const c of ev.choices) {
        const d = c?.delta
        if (isObject(d)) {
          if (typeof d.content === 'string') this.text.push(d.content)
          if (typeof d.refusal === 'string') this.text.push(d.refusal)
          if (Array.isArray(d.tool_calls)) {
            for (const tc of d.tool_calls) {
              const fn = tc?.function
              if (typeof fn?.name === 'string') this.text.push(fn.name)
              if (typeof fn?.arguments === 'string') this.text.push(fn.arguments)
            }
          }
        } else if (typeof c?.text === 'string') {
          this.text.push(c.text)
        }
      }
    }
  }

  json(body: unknown): void {
    if (!isObject(body)) return
    if (typeof body.model === 'string' && body.model) this.model = body.model
    this.usage = openaiUsage(body.usage)
  }

  result(): MeterResult {
    return {
      usage: this.usage,
      model: this.model,
      outputText: this.usage ? undefined : this.text.join(''),
    }
  }
}

export const openai: Provider = {
  name: 'openai',
  pricingId: 'openai',
  defaultBaseUrl: 'https://api.openai.com/v1',
  mount: '/openai/v1',
  inspect: inspectOpenAI,
  meter: () => new OpenAIMeter(),
}
