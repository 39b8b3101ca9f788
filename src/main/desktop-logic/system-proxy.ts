import type { Config } from '../config/schema'
import { PROVIDERS } from '../providers/registry'
import { buildUpstreams } from '../proxy/routes'
import { isLoopbackHost } from '../security/hosts'
import { proxySettings } from '../http/network'
import { PRICE_DATA_URL } from '../pricing/library'

/**
 * The system's proxy settings for the desktop app. Started from the Dock, the Start menu or at
 * login, the app has no HTTPS_PROXY: on a corporate machine the proxy is in the system's settings
 * (a PAC file, WPAD, or a fixed proxy), which Electron resolves per URL and Node does not. Without
 * them every upstream call would try to go out directly and fail. So, when neither the config
 * (`upstream.proxy`) nor the environment names a proxy, the app asks the system for each address
 * Burnrate calls, and gives the core the proxy it answers as `upstream.proxy`, with the addresses
 * it reaches directly in `upstream.no_proxy`.
 */

/**
 * Electron's answer for a URL (`PROXY host:port; DIRECT`), in its order of preference: the first
 * HTTP(S) or SOCKS5 proxy as a URL, 'DIRECT', or null when it offers only what Burnrate cannot
 * use (SOCKS, which is version 4 in a PAC answer).
 */
export function proxyOfPac(answer: string): string | 'DIRECT' | null {
  const schemes: Record<string, string> = { PROXY: 'http', HTTPS: 'https', SOCKS5: 'socks5' }
  for (const part of answer.split(';')) {
    const m = /^\s*(PROXY|HTTPS|SOCKS5)\s+(\S+)\s*$/i.exec(part)
    if (m) return `${schemes[m[1].toUpperCase()]}://${m[2]}`
    if (/^\s*DIRECT\s*$/i.test(part)) return 'DIRECT'
  }
  return null
}

export interface SystemNetwork {
  /** The proxy most of Burnrate's addresses go through (for `upstream.proxy`). */
  proxy: string
  /** Hosts the system reaches directly (added to `upstream.no_proxy`). */
  direct: string[]
  /** Addresses the system sends through another proxy, or only through SOCKS4, which go through `proxy` instead. */
  unlike: string[]
}

/** Every address the core may call out to: the upstreams, price updates, webhooks, the team server, the OTLP collector. */
export function outboundOrigins(config: Config): string[] {
  const urls: string[] = [...buildUpstreams(PROVIDERS, config.providers).values()]
    .flatMap((u) => (u.anthropicApi ? [u, u.anthropicApi] : [u]))
    .filter((u) => u.enabled && u.origin)
    .map((u) => u.origin)
  urls.push(config.pricing.update_url ?? PRICE_DATA_URL)
  for (const w of config.alerts.webhooks) urls.push(w.url)
  if (config.team.url) urls.push(config.team.url)
  if (config.otel.endpoint) urls.push(config.otel.endpoint)
  const origins = new Set<string>()
  for (const u of urls) {
    const url = new URL(u)
    if (!isLoopbackHost(url.hostname)) origins.add(url.origin)
  }
  return [...origins]
}

/**
 * The system's proxy for Burnrate's calls out, asked with `resolve` (Electron's
 * `session.resolveProxy`) for each address; null when the config or the environment already
 * names a proxy, when the system reaches every address directly, or when it has not answered
 * within `timeoutMs` (a WPAD search can take long: the app starts without it, and says so).
 */
export async function systemNetwork(
  config: Config,
  env: NodeJS.ProcessEnv,
  resolve: (url: string) => Promise<string>,
  timeoutMs = 3000,
): Promise<SystemNetwork | null> {
  // The core's own reading of upstream.proxy and HTTPS_PROXY / HTTP_PROXY: when it has a proxy, that one stands.
  if (proxySettings({ proxy: config.upstream.proxy }, env)) return null
  const origins = outboundOrigins(config)
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<null>((r) => {
    timer = setTimeout(() => r(null), timeoutMs)
    timer.unref?.()
  })
  // A failure to ask (thrown or rejected) is no answer for that address: it never stops the app.
  const ask = (o: string) => Promise.resolve().then(() => resolve(o)).then(proxyOfPac, () => null)
  const answers = await Promise.race([Promise.all(origins.map(ask)), late]).finally(() => clearTimeout(timer))
  if (!answers) return null
  const counts = new Map<string, number>()
  for (const p of answers) if (p && p !== 'DIRECT') counts.set(p, (counts.get(p) ?? 0) + 1)
  if (counts.size === 0) return null
  const proxy = [...counts.entries()].sort((a, b) => b[1] - a[1])[0][0]
  const direct: string[] = []
  const unlike: string[] = []
  origins.forEach((o, i) => {
    const p = answers[i]
    // With its port, the default one too: a NO_PROXY host without one matches every port of it,
    // which would send another of its ports the system proxies (an OTLP collector's) directly.
    if (p === 'DIRECT') {
      const u = new URL(o)
      direct.push(`${u.host.replace(/:\d*$/, '')}:${u.port || (u.protocol === 'http:' || u.protocol === 'ws:' ? 80 : 443)}`)
    }
    else if (p !== proxy) unlike.push(o)
  })
  return { proxy, direct, unlike }
}

/**
 * The system's proxy as environment variables, for a server the app starts as plain Node (the
 * headless one "Keep a server running" leaves): plain Node cannot ask the system, so without
 * them that server's calls would go out directly and fail where only the proxy reaches out.
 * Both spellings, so a malformed variable the app ignored does not win; NO_PROXY keeps the
 * environment's entries and adds the hosts the system reaches directly.
 */
export function proxyEnv(sys: Pick<SystemNetwork, 'proxy' | 'direct'>, env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const noProxy = [env.no_proxy || env.NO_PROXY || '', ...sys.direct].filter(Boolean).join(',')
  return { HTTPS_PROXY: sys.proxy, https_proxy: sys.proxy, HTTP_PROXY: sys.proxy, http_proxy: sys.proxy, NO_PROXY: noProxy, no_proxy: noProxy }
}
