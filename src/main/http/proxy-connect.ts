import type { Dispatcher } from 'undici'

/** The code of a proxy that closed the connection before it answered CONNECT (../proxy/call/network-errors.ts says it in words). */
export const PROXY_CLOSED = 'PROXY_CLOSED'
/** The code of a proxy that answered CONNECT with what is not HTTP/1.1. */
export const PROXY_MALFORMED = 'PROXY_MALFORMED'

/**
 * undici's ProxyAgent opens each tunnel with a CONNECT through its client to the proxy. A proxy
 * that closes the connection without answering it (or part way through its answer: a proxy
 * restarting, a filter dropping the host) fails that CONNECT with a socket error, which the
 * upstream's pool takes for one to retry at once: it connected again and again, thousands of
 * CONNECTs a second to the proxy, and the agent's call waited until its first-byte timeout (600 s
 * by default; Burnrate's own calls out, their own timeout). `client` is that client to the proxy
 * (a ProxyAgent's `clientFactory` result), its CONNECT failing instead with an error the pool
 * does not retry, which says the proxy closed the connection, its cause kept. A CONNECT answered
 * with what is not HTTP/1.1 says it was the proxy's answer: undici's parser error was told the
 * agent as the provider's answer, one that may have been billed there, for a call that never left.
 */
export function failClosedConnect<D extends Dispatcher>(client: D): D {
  const connect = client.connect.bind(client) as (o: Dispatcher.ConnectOptions, cb?: unknown) => unknown
  ;(client as { connect: unknown }).connect = (o: Dispatcher.ConnectOptions, cb?: unknown) => {
    // undici's ProxyAgent awaits the promise form; a callback (anyone else) is left as it is.
    if (cb !== undefined) return connect(o, cb)
    return (connect(o) as Promise<Dispatcher.ConnectData>).catch((err: unknown) => {
      throw closedBeforeAnswer(err)
    })
  }
  return client
}

function closedBeforeAnswer(err: unknown): unknown {
  const e = err as { code?: unknown; name?: unknown; message?: unknown } | null
  const why = String(e?.message || e?.code)
  if (e?.code === 'UND_ERR_SOCKET') {
    return Object.assign(new Error(`the proxy closed the connection without answering its CONNECT request (${why})`, { cause: err }), { code: PROXY_CLOSED })
  }
  if (e?.name === 'HTTPParserError' || (typeof e?.code === 'string' && e.code.startsWith('HPE_'))) {
    return Object.assign(new Error(`the proxy answered its CONNECT request with what is not HTTP/1.1 (${why})`, { cause: err }), { code: PROXY_MALFORMED })
  }
  return err
}
