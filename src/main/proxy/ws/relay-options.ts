import type { ProxyRule } from '../../http/network'
import type { Attributors } from '../call/context'
import type { HeadersObserver } from '../call/forward'
import type { BodyMemory } from '../call/request-body'
import type { CallLifecycle } from '../call/lifecycle'

/** What the WebSocket relay (./relay.ts) is given by the proxy: its calls' lifecycle, its time limits, its network. */
export interface WebSocketRelayOptions {
  life: CallLifecycle
  who: Attributors
  timeouts: { connect_timeout_ms: number; first_byte_timeout_ms: number; idle_timeout_ms: number }
  maxFrameBytes: number
  /** The memory for request bodies, all calls together: the client's messages take their share of it (./message-memory.ts). */
  memory: BodyMemory
  /** Resolves once calls can be priced (the server's Pricer's `ready`); the first upgrade waits for it. */
  pricesReady: () => Promise<void>
  /** Certificate authorities for wss:// upstreams (the usual ones plus `upstream.ca_file`'s); unset: Node's own. */
  ca?: string[]
  /** The proxy rule (upstream.proxy, HTTPS_PROXY...), the same as HTTP calls'; unset: no proxy. */
  proxy?: ProxyRule | null
  /** Sees the upstream's meter (upgrade headers, Codex's `codex.rate_limits` events). */
  observeHeaders?: HeadersObserver
  /** Logs why an upstream could not be reached, as for HTTP calls (each line at most once a minute). */
  warn?: (line: string) => void
}
