import { type Timers, realTimers } from './throttle'

export interface HttpPollOptions {
  /** How often to ask, counted from the end of the previous answer. */
  pollMs?: number
  /** Per-request timeout (default 2 s). */
  timeoutMs?: number
  fetch?: typeof fetch
  timers?: Timers
  /** Extra request headers (a dashboard token). */
  headers?: Record<string, string>
  /**
   * Asked before each request: false while the server may not be asked (another user's program
   * listens on its port: ./listener-owner.ts's `ownListener`). No request is sent, so the headers
   * (the dashboard token) never reach it, and the poll reports no answer.
   */
  allowed?: () => Promise<boolean>
}

/**
 * Asks `path` of an attached Burnrate now and again every `pollMs` after each answer, until
 * stopped. `onAnswer` gets the JSON body of a 2xx answer, or undefined when there was none
 * (refused, unreachable, timed out, not JSON); and the status of an answer that was not 2xx
 * (401: the dashboard token was refused), null when there was no answer or it was 2xx.
 */
export function pollJson(baseUrl: string, path: string, defaultPollMs: number, opts: HttpPollOptions, onAnswer: (body: unknown, status: number | null) => void): { stop(): void } {
  const pollMs = opts.pollMs ?? defaultPollMs
  const timeoutMs = opts.timeoutMs ?? 2000
  const doFetch = opts.fetch ?? fetch
  const timers = opts.timers ?? realTimers
  const url = new URL(path, baseUrl).toString()
  let timer: unknown = null
  let stopped = false
  let inFlight = false
  const poll = async () => {
    timer = null
    if (stopped || inFlight) return
    inFlight = true
    let body: unknown
    let status: number | null = null
    try {
      if (opts.allowed && !(await opts.allowed())) throw new Error('not the server attached to')
      const res = await doFetch(url, { headers: opts.headers, signal: AbortSignal.timeout(timeoutMs) })
      if (!res.ok) {
        status = res.status
        throw new Error(`HTTP ${res.status}`)
      }
      body = await res.json()
    } catch {
      body = undefined
    } finally {
      inFlight = false
    }
    if (stopped) return
    try {
      onAnswer(body, status)
    } catch {
      // what a listener does with an answer is its own; polling goes on
    }
    timer = timers.setTimeout(() => void poll(), pollMs)
  }
  void poll()
  return {
    stop() {
      stopped = true
      if (timer !== null) timers.clearTimeout(timer)
      timer = null
    },
  }
}
