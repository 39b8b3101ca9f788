import type { Agent } from 'node:http'

/**
 * A signal's URL under the collector's base URL: its path goes after the endpoint's own path,
 * before its query (a collector behind a gateway may want `?tenant=…`): appended to the text, it
 * landed inside the query.
 */
export function signalUrl(endpoint: string, path: string): string {
  const u = new URL(endpoint)
  u.pathname = `${u.pathname.replace(/\/+$/, '')}${path}`
  return u.toString()
}

/** A keep-alive agent for `endpoint`'s protocol, as the exporters make their own. */
export function directAgent(endpoint: string): Promise<Agent> {
  return (new URL(endpoint).protocol === 'https:' ? import('node:https') : import('node:http')).then((m) => new m.Agent({ keepAlive: true }))
}

/** A failed export's reason, as `last_error` shows it. */
export function describeFailure(err: unknown): string {
  const e = err as { message?: string; code?: string | number } | undefined
  return String(e?.message ?? err ?? 'export failed').slice(0, 300)
}

/** What a collector refused of an export it answered 200 (OTLP partial success): how many items, and why. */
export interface Refused {
  count: number
  why: string
}

/** The serializer interface of the OTLP exporters (otlp-transformer's ISerializer). */
interface Serializer<Req, Res> {
  serializeRequest(request: Req): Uint8Array | undefined
  deserializeResponse(data: Uint8Array): Res
}

/**
 * `inner`, keeping what each answer refused (`rejectedSpans` or `rejectedDataPoints`, with its
 * `errorMessage`). The SDK's exporters report a partial success as a success; the exporter reads
 * the answer with this serializer and then, at once, calls the export's callback, where `take()`
 * reads what that answer refused (null: nothing, or no answer read).
 */
export function keepingRefused<Req, Res>(inner: Serializer<Req, Res>, field: 'rejectedSpans' | 'rejectedDataPoints'): { serializer: Serializer<Req, Res>; take(): Refused | null } {
  let last: Refused | null = null
  return {
    serializer: {
      serializeRequest: (request) => inner.serializeRequest(request),
      deserializeResponse: (data) => {
        last = null
        const answer = inner.deserializeResponse(data)
        const partly = (answer as { partialSuccess?: Record<string, unknown> } | null)?.partialSuccess
        // OTLP's JSON writes the count (an int64) as a string.
        const count = Number(partly?.[field] ?? 0)
        if (count > 0) last = { count, why: String(partly?.errorMessage ?? '').slice(0, 300) }
        return answer
      },
    },
    take() {
      const refused = last
      last = null
      return refused
    },
  }
}
