import type { ApiErrorBody } from '../../../shared/api'

/** The server answered with the contract's error shape (or some other non-2xx). */
export class ApiError extends Error {
  override name = 'ApiError'
  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
    readonly body: unknown = null,
  ) {
    super(message)
  }
}

/** No answer at all: the server is down, restarting, or the network is gone. */
export class UnreachableError extends Error {
  override name = 'UnreachableError'
}

export type Params = Record<string, string | number | undefined | null>

export interface RequestOptions {
  method?: 'GET' | 'POST' | 'PUT' | 'DELETE'
  params?: Params
  body?: unknown
  /** Admin bearer token. */
  token?: string
  signal?: AbortSignal
  /**
   * Give up after this many ms without the whole answer (an UnreachableError): a request the
   * server never answers (a hung process, a connection dropped without a word across a sleep or
   * a network change) otherwise waits for good, and whatever waits on it with it.
   */
  timeoutMs?: number
}

/** `path?params` with empty values left out, so `tenant=''` means "every tenant". */
export function buildUrl(path: string, params: Params = {}): string {
  const q = new URLSearchParams()
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') q.set(k, String(v))
  const s = q.toString()
  return s ? `${path}?${s}` : path
}

/** One call to the Burnrate HTTP contract, same origin. Resolves to the JSON body (null for 204). */
export async function api<T>(path: string, opts: RequestOptions = {}): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' }
  if (opts.token) headers.authorization = `Bearer ${opts.token}`
  if (opts.body !== undefined) headers['content-type'] = 'application/json'
  let signal = opts.signal
  let timer: ReturnType<typeof setTimeout> | undefined
  let timedOut = false
  if (opts.timeoutMs !== undefined) {
    const ctl = new AbortController()
    opts.signal?.addEventListener('abort', () => ctl.abort(opts.signal!.reason), { once: true })
    timer = setTimeout(() => {
      timedOut = true
      ctl.abort()
    }, opts.timeoutMs)
    signal = ctl.signal
  }
  const unanswered = (err: unknown): Error =>
    timedOut
      ? new UnreachableError(`The Burnrate server did not answer within ${Math.round(opts.timeoutMs! / 1000)} s.`)
      : (err as Error)?.name === 'AbortError'
        ? (err as Error)
        : new UnreachableError('The Burnrate server did not answer.')
  let res: Response
  let text: string
  try {
    res = await fetch(buildUrl(path, opts.params), {
      method: opts.method ?? 'GET',
      headers,
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
      signal,
      cache: 'no-store',
      // Same-origin cookies: the dashboard session cookie that logging in (/login) sets.
      credentials: 'same-origin',
    })
    text = res.status === 204 ? '' : await res.text()
  } catch (err) {
    throw unanswered(err)
  } finally {
    clearTimeout(timer)
  }
  if (res.status === 204) return null as T
  let json: unknown
  try {
    json = text ? JSON.parse(text) : null
  } catch {
    json = null
  }
  if (!res.ok) {
    const e = (json as ApiErrorBody | null)?.error
    throw new ApiError(
      res.status,
      e?.type ?? 'http_error',
      e?.message ?? `The server answered ${res.status} ${res.statusText}`.trim() + '.',
      json,
    )
  }
  if (json === null && text) throw new ApiError(res.status, 'bad_response', `The server sent something that is not JSON for ${path}.`)
  return json as T
}
