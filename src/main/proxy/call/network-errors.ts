import { PROXY_CLOSED, PROXY_MALFORMED } from '../../http/proxy-connect'

/**
 * What a failure to reach an upstream means, in words a person can act on, with the fix: DNS,
 * TLS trust, HTTP/2-only servers, proxies. The code (ENOTFOUND, SELF_SIGNED_CERT_IN_CHAIN...)
 * is kept for the ledger's `error` field and /api/admin/providers.
 */

export interface NetworkProblem {
  /** The specific cause: a system or TLS error code, or `PROXY_<status>`. */
  code: string
  /** One clause: what went wrong and what to do about it. */
  words: string
}

const DNS = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_FAIL', 'EAI_NONAME', 'EAI_NODATA'])
const UNTRUSTED = new Set([
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_UNTRUSTED',
  'CERT_SIGNATURE_FAILURE',
])

function codeOf(err: unknown): string | undefined {
  for (let e = err as { code?: unknown; cause?: unknown } | undefined, i = 0; e && i < 4; e = e.cause as typeof e, i++) {
    if (typeof e.code === 'string' && !e.code.startsWith('UND_ERR')) return e.code
  }
  const c = (err as { code?: unknown })?.code
  return typeof c === 'string' ? c : undefined
}

/**
 * The proxy's refusal: its answer to CONNECT (undici: `Proxy response (403) !== 200 …`), or its
 * 407 to an http upstream's request forwarded without a tunnel (`Proxy Authentication Required (407)`).
 */
export const PROXY_REFUSAL = /Proxy response \((\d+)\)|Proxy Authentication Required \((407)\)/

/** Codes of failures where the upstream was reached (it closed the connection, or answered what is not read): not "Could not reach". */
export const REACHED = new Set(['CONNECTION_CLOSED', 'HEADERS_TOO_LARGE', 'MALFORMED_ANSWER'])

/** What `err` (from connecting or talking to `host` for `provider`) means; null when it says nothing specific. */
export function describeNetworkError(err: Error, host: string, provider: string): NetworkProblem | null {
  const code = codeOf(err)
  const baseUrl = `providers.${provider}.base_url`
  if (code && DNS.has(code)) {
    return {
      code,
      words: `the host name ${host.replace(/:\d+$/, '')} could not be resolved (DNS ${code}); check the host name in ${baseUrl} and this machine's network, and behind a corporate proxy set HTTPS_PROXY or upstream.proxy`,
    }
  }
  if (code && UNTRUSTED.has(code)) {
    return {
      code,
      words: `its TLS certificate is not signed by a certificate authority this machine trusts (${code}); if a corporate proxy or a private CA signs it, point upstream.ca_file (or the NODE_EXTRA_CA_CERTS environment variable) at that CA's PEM file`,
    }
  }
  if (code === 'CERT_HAS_EXPIRED' || code === 'CERT_NOT_YET_VALID') {
    return { code, words: `its TLS certificate is expired or not yet valid (${code}); check this machine's clock, or tell the server's owner` }
  }
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID' || code === 'HOSTNAME_MISMATCH') {
    return { code, words: `its TLS certificate is for another host name (${code}); check the host name in ${baseUrl}` }
  }
  if (code === 'ERR_SSL_TLSV1_ALERT_NO_APPLICATION_PROTOCOL') {
    return {
      code,
      words: `it accepts only HTTP/2 (${code}), and Burnrate speaks HTTP/1.1 to upstreams; point ${baseUrl} at an endpoint that accepts HTTP/1.1`,
    }
  }
  if (code === 'ERR_SSL_WRONG_VERSION_NUMBER' || code === 'EPROTO') {
    return { code, words: `the TLS handshake failed (${code}); if the server speaks plain HTTP, use http:// in ${baseUrl}` }
  }
  if (code === 'ECONNREFUSED') {
    return { code, words: `the connection was refused (ECONNREFUSED): nothing accepts connections at ${host}; check ${baseUrl}` }
  }
  if ((err as Error).name === 'HTTPParserError' || code?.startsWith('HPE_')) {
    // undici's (and node:http's) parser refused the answer: RFC 9112 lets a client read one with
    // both lengths by its Transfer-Encoding, but neither parser can be told to, nor to close the
    // connection after it as the RFC then asks.
    const why = /\(([^()]*)\)\s*$/.exec(err.message)?.[1] ?? err.message
    const smuggling = /Transfer-Encoding/i.test(why) ? ', which Burnrate does not read (HTTP/1.1 forbids it: a sign of request smuggling or response splitting)' : ''
    return {
      code: 'MALFORMED_ANSWER',
      words: `answered with a response that is not valid HTTP/1.1 (${why})${smuggling}; the call may have been processed, and billed, there, and its usage is not known: a proxy or gateway between Burnrate and the provider may be breaking its answers`,
    }
  }
  if (code === PROXY_CLOSED || code === PROXY_MALFORMED) {
    return {
      code,
      words: `${err.message}, so the call did not reach it; check the proxy (upstream.proxy or HTTPS_PROXY / HTTP_PROXY) and that it allows ${host}, or list the host in upstream.no_proxy / NO_PROXY`,
    }
  }
  if (code === 'UND_ERR_SOCKET' || code === 'ECONNRESET' || code === 'EPIPE') {
    return { code: 'CONNECTION_CLOSED', words: `it closed the connection before answering (${err.message || code}); the call may or may not have been processed there` }
  }
  if ((err as { code?: unknown }).code === 'UND_ERR_HEADERS_OVERFLOW') {
    return { code: 'HEADERS_TOO_LARGE', words: `its answer's headers are larger than Burnrate takes (256 KiB); the call may have been processed there` }
  }
  const proxy = PROXY_REFUSAL.exec(err.message)
  if (proxy) {
    const status = Number(proxy[1] ?? proxy[2])
    const words =
      status === 407
        ? 'the proxy asks for credentials (407); put them in the proxy URL (http://user:password@proxy:port) in upstream.proxy or HTTPS_PROXY / HTTP_PROXY'
        : `the proxy refused to connect to it (HTTP ${status}); check that the proxy allows ${host}, or list the host in upstream.no_proxy / NO_PROXY`
    return { code: `PROXY_${status}`, words }
  }
  return null
}
