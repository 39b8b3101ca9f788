import type { IncomingHttpHeaders } from 'node:http'
import { LIVE_PREFIX } from '../providers/gemini-live-path'
import type { Provider, ProviderSettings } from '../providers/types'

export type { ProviderSettings }

/** A provider with its configured upstream. */
export interface Upstream {
  provider: Provider
  enabled: boolean
  /** The configured base URL, or null when none is configured and there is no default. */
  baseUrl: string | null
  protocol: 'http:' | 'https:'
  hostname: string
  port: number
  /** `protocol://host[:port]` of the base URL ('' when there is none). */
  origin: string
  /** Host header value for the upstream. */
  host: string
  /** The base URL's path without a trailing slash ('' for the root). */
  basePath: string
  /** No base URL configured and the provider takes each request's from its path (`Provider.place`). */
  regional: boolean
  /** The provider's Anthropic-compatible API (`Provider.anthropicApi`), with its own base URL; enabled with the provider. */
  anthropicApi?: Upstream
}

export interface Route {
  upstream: Upstream
  /** The path below the provider's mount, starting with `/`. */
  path: string
  /** The query string without `?`. */
  query: string
}

export function buildUpstreams(
  providers: readonly Provider[],
  settings: Record<string, ProviderSettings | undefined>,
): Map<string, Upstream> {
  const out = new Map<string, Upstream>()
  for (const known of providers) {
    const s = settings[known.name] ?? {}
    const p = known.configure ? known.configure(s) : known
    const regional = !s.base_url && p.place !== undefined
    const u = upstreamOf(p, s.enabled ?? true, s.base_url ?? p.defaultBaseUrl, regional)
    if (p.anthropicApi) u.anthropicApi = upstreamOf(p.anthropicApi, u.enabled, s.anthropic_base_url ?? p.anthropicApi.defaultBaseUrl, false)
    out.set(p.name, u)
  }
  return out
}

function upstreamOf(provider: Provider, enabled: boolean, baseUrl: string | null, regional: boolean): Upstream {
  const u = baseUrl ? new URL(baseUrl) : null
  const isHttps = u ? u.protocol === 'https:' : true
  return {
    provider,
    enabled,
    baseUrl,
    protocol: isHttps ? 'https:' : 'http:',
    hostname: u ? u.hostname.replace(/^\[|\]$/g, '') : '',
    port: u ? Number(u.port) || (isHttps ? 443 : 80) : 0,
    origin: u ? u.origin : '',
    host: u ? u.host : '',
    basePath: u ? u.pathname.replace(/\/+$/, '') : '',
    regional,
  }
}

/** The regional upstreams a router keeps (each has its own connection pool); a path naming more has none. */
const MAX_REGIONAL = 64

/** Gemini's model methods in its `v1` API, the ones `/v1/models/{model}:<method>` names. */
const GEMINI_V1_METHODS = new Set(['generateContent', 'streamGenerateContent', 'countTokens', 'embedContent', 'batchEmbedContents'])

/**
 * A `/v1` path (below `/v1`) only Gemini serves: `/models/{model}:<Gemini method>` (what Gemini
 * CLI sends with `GOOGLE_GENAI_API_VERSION=v1`) or `/tunedModels/…`. OpenAI's `/models` (list) and
 * `/models/{id}` (its fine-tuned ids have colons, `ft:gpt-4o:org::id`, but no Gemini method) are not.
 */
function geminiV1Path(rest: string): boolean {
  if (rest.startsWith('/tunedModels/')) return true
  if (!rest.startsWith('/models/')) return false
  const colon = rest.lastIndexOf(':')
  return colon > 8 && GEMINI_V1_METHODS.has(rest.slice(colon + 1))
}

/**
 * The vendor whose key a call carries the way only that vendor's clients send it: Gemini's
 * `x-goog-api-key` or `?key=`, Anthropic's `sk-ant-…` in `x-api-key`. '' for any other. A bearer
 * token never decides: the OpenAI SDK sends every key as one, and a gateway configured as
 * `providers.openai.base_url` may take a Gemini (Google's OpenAI-compatible endpoint) or an
 * Anthropic key that way; the path and headers decide those.
 */
function keyVendor(headers: IncomingHttpHeaders, query: string): 'gemini' | 'anthropic' | '' {
  if (headers['x-goog-api-key'] !== undefined || query.startsWith('key=') || query.includes('&key=')) return 'gemini'
  const apiKey = headers['x-api-key']
  if (typeof apiKey === 'string' && apiKey.trimStart().startsWith('sk-ant-')) return 'anthropic'
  return ''
}

const NO_MOUNTS: readonly { mount: string; upstream: Upstream }[] = []

/** `/deepseek` of `/deepseek/anthropic/v1/messages` (the whole path when it has one segment). */
function firstSegment(path: string): string {
  const slash = path.indexOf('/', 1)
  return slash === -1 ? path : path.slice(0, slash)
}

function below(path: string, prefix: string): string | null {
  if (path === prefix) return '/'
  if (path.startsWith(prefix) && path.charCodeAt(prefix.length) === 47 /* '/' */) return path.slice(prefix.length)
  return null
}

/**
 * Maps a request to its provider. Each provider's mount (`/openai/v1`, `/anthropic`, ...)
 * stands for its base URL. The bare paths that agents use by default are aliases:
 * `/v1/*` that is Gemini's (a Gemini method or tuned model, see `geminiV1Path`, or carrying a
 * Gemini key) goes to Gemini as `/gemini/v1/*`; `/v1/messages*` (and any `/v1/*` sent with an
 * `anthropic-version` header or an Anthropic key) go to Anthropic as `/anthropic/v1/...`; every
 * other `/v1/*` goes to OpenAI as `/openai/v1/*`; `/v1beta/*`
 * and `/v1alpha/*` go to Gemini as `/gemini/v1beta/*`, and so do its downloads, `/download/v1beta/*`,
 * and its Live API socket, `/ws/google.ai.generativelanguage.*`.
 *
 * A call bound for OpenAI that carries a `chatgpt-account-id` header is Codex logged in with
 * ChatGPT (its own `openai_base_url` moves that login's calls too): its token is only good at the
 * ChatGPT backend, so it goes there, `/v1/<rest>` as `/chatgpt/codex/<rest>` (Codex's ChatGPT
 * base URL is `https://chatgpt.com/backend-api/codex`). One setting then serves both logins.
 */
export class Router {
  /**
   * The mounts by their first segment (`/deepseek` for `/deepseek/v1` and `/deepseek/anthropic`),
   * longest first within one: a path is compared only with the mounts that share its first
   * segment, so a provider added costs the others nothing.
   */
  private readonly mounts = new Map<string, { mount: string; upstream: Upstream }[]>()
  private readonly regional = new Map<string, Upstream>()

  constructor(readonly upstreams: Map<string, Upstream>) {
    const all: { mount: string; upstream: Upstream }[] = []
    for (const u of upstreams.values()) {
      all.push({ mount: u.provider.mount, upstream: u })
      if (u.anthropicApi) all.push({ mount: u.anthropicApi.provider.mount, upstream: u.anthropicApi })
    }
    all.sort((a, b) => b.mount.length - a.mount.length)
    for (const m of all) {
      const first = firstSegment(m.mount)
      const list = this.mounts.get(first)
      if (list) list.push(m)
      else this.mounts.set(first, [m])
    }
  }

  match(url: string, headers: IncomingHttpHeaders): Route | null {
    const q = url.indexOf('?')
    const path = q === -1 ? url : url.slice(0, q)
    const query = q === -1 ? '' : url.slice(q + 1)
    if (path.startsWith('/v1')) {
      const rest = below(path, '/v1')
      if (rest !== null) {
        // A client's key goes only to its vendor: Gemini's before anything else, since a Gemini
        // key sent to OpenAI or Anthropic (their 404) would leave the machine for the wrong vendor.
        const key = keyVendor(headers, query)
        const gemini = this.upstreams.get('gemini')
        if (gemini && (key === 'gemini' || geminiV1Path(rest))) return { upstream: gemini, path, query }
        const anthropic = this.upstreams.get('anthropic')
        if (anthropic && (key === 'anthropic' || below(path, '/v1/messages') !== null || headers['anthropic-version'] !== undefined)) {
          return { upstream: anthropic, path, query }
        }
        const openai = this.upstreams.get('openai')
        if (openai) return this.chatgptLogin(headers, rest, query) ?? { upstream: openai, path: rest, query }
      } else if (below(path, '/v1beta') !== null || below(path, '/v1alpha') !== null) {
        // Gemini's API versions: a client whose Gemini base URL is the bare address.
        const gemini = this.upstreams.get('gemini')
        if (gemini) return { upstream: gemini, path, query }
      }
    } else if (path.startsWith(LIVE_PREFIX)) {
      // Gemini's Live API socket, at the bare address an SDK's base URL gives it.
      const gemini = this.upstreams.get('gemini')
      if (gemini) return { upstream: gemini, path, query }
    } else if (path.startsWith('/download/v1')) {
      // Gemini's file downloads (a batch's results file among them) live under `/download/`.
      const gemini = this.upstreams.get('gemini')
      if (gemini && (below(path, '/download/v1beta') !== null || below(path, '/download/v1alpha') !== null)) return { upstream: gemini, path, query }
    }
    for (const m of this.mounts.get(firstSegment(path)) ?? NO_MOUNTS) {
      const rest = below(path, m.mount)
      if (rest === null) continue
      if (m.upstream.provider.name === 'openai') return this.chatgptLogin(headers, rest, query) ?? { upstream: m.upstream, path: rest, query }
      if (m.upstream.provider.place) return this.placed(m.upstream, rest, query)
      return { upstream: m.upstream, path: rest, query }
    }
    return null
  }

  /**
   * A call of a provider whose path names where it goes (Vertex AI's location, Bedrock's region):
   * the path it names, to the configured base URL, else to the place's own upstream (one per base
   * URL for the router's life). A path that names no place goes as it is, to the configured base
   * URL, else nowhere (the provider's upstream without a base URL: the handler says what to set).
   */
  private placed(upstream: Upstream, path: string, query: string): Route {
    const place = upstream.provider.place!(path)
    if (!place) return { upstream, path, query }
    if (!upstream.regional) return { upstream, path: place.path, query }
    const key = `${upstream.provider.name} ${place.baseUrl}`
    let u = this.regional.get(key)
    if (!u) {
      if (this.regional.size >= MAX_REGIONAL) return { upstream, path, query }
      u = upstreamOf(upstream.provider, upstream.enabled, place.baseUrl, false)
      this.regional.set(key, u)
    }
    return { upstream: u, path: place.path, query }
  }

  /** The ChatGPT backend's route for an OpenAI-bound call made with a ChatGPT login, else null. */
  private chatgptLogin(headers: IncomingHttpHeaders, rest: string, query: string): Route | null {
    const account = headers['chatgpt-account-id']
    if (typeof account !== 'string' || account === '') return null
    const chatgpt = this.upstreams.get('chatgpt')
    return chatgpt ? { upstream: chatgpt, path: `/codex${rest === '/' ? '' : rest}`, query } : null
  }
}

export function upstreamPath(route: Route): string {
  const p = route.upstream.basePath + route.path
  return route.query ? `${p}?${route.query}` : p
}
