import { createRequire } from 'node:module'
import type * as Undici from 'undici'
import type { Dispatcher } from 'undici'

/**
 * undici's `request()` (the price update's GET, the alert webhooks' POST), loaded from its own
 * modules: the request API, the global dispatcher and the URL parser. undici's index, which the
 * package's `request` export lives in, also loads fetch, WebSocket, the caches, the mocks and
 * their helpers (about 110 files, and through them Node's own bundled undici): about 3 MiB of
 * source text and compiled code that a headless server then held for good after its first price
 * check, 10 s after start. This is the very function the index exports (its `makeDispatcher`
 * wrapper does the same with the URL), on the same global dispatcher, so a dispatcher set with
 * undici's `setGlobalDispatcher` is still the one used.
 */
const require = createRequire(import.meta.url)

type Options = Omit<Dispatcher.RequestOptions, 'origin' | 'path' | 'method'> & {
  method?: Dispatcher.HttpMethod
  /** The dispatcher to send with (an Egress's, behind a proxy); unset: undici's global one. */
  dispatcher?: Dispatcher
}
type ApiRequest = (this: Dispatcher, opts: Dispatcher.RequestOptions) => Promise<Dispatcher.ResponseData>

let api: { request: ApiRequest; dispatcher: () => Dispatcher; parseURL: (url: string) => URL } | undefined

export function request(url: string, opts: Options = {}): Promise<Dispatcher.ResponseData> {
  api ??= {
    request: require('undici/lib/api/api-request.js') as ApiRequest,
    dispatcher: (require('undici/lib/global.js') as typeof Undici).getGlobalDispatcher,
    parseURL: (require('undici/lib/core/util.js') as { parseURL(url: string): URL }).parseURL,
  }
  // As undici's index does: its URL checks (http or https, a host), then origin and path.
  const u = api.parseURL(url)
  const { dispatcher, ...rest } = opts
  return api.request.call(dispatcher ?? api.dispatcher(), {
    ...rest,
    origin: u.origin,
    path: u.search ? `${u.pathname}${u.search}` : u.pathname,
    method: opts.method ?? (opts.body ? 'PUT' : 'GET'),
  })
}
