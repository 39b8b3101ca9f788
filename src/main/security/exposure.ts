import { ConfigError } from '../config/load'
import type { Config } from '../config/schema'
import type { Logger } from '../log'
import { isLoopbackHost } from './hosts'

/**
 * Checks the listen address before start-up. On a loopback address only this machine can
 * reach Burnrate. Anywhere else, other machines can reach it: that is logged as a warning, and
 * the dashboard (every call's spend, agents and sessions) must then be protected by
 * `dashboard.token` (and so must `/metrics` when it is on); without one, start-up is refused rather than publish it.
 */
export function checkExposure(config: Pick<Config, 'server' | 'dashboard' | 'metrics' | 'source'>, log: Logger): void {
  const host = config.server.host
  if (isLoopbackHost(host)) return
  if (config.metrics.enabled && !config.dashboard.token) {
    throw new ConfigError(
      `config ${config.source ?? '(defaults)'}: server.host is ${host}, which other machines can reach, so /metrics (every provider's, model's and tenant's spend) needs a token: set dashboard.token (Prometheus sends it as a bearer token), or metrics.enabled: false, or listen on 127.0.0.1`,
    )
  }
  if (config.dashboard.enabled && !config.dashboard.token) {
    throw new ConfigError(
      `config ${config.source ?? '(defaults)'}: server.host is ${host}, which other machines can reach, so the dashboard needs a token: set dashboard.token (or dashboard.enabled: false), or listen on 127.0.0.1`,
    )
  }
  log.warn(
    `listening on ${host}, reachable from other machines: anyone who can reach it can send calls through the proxy with their own API keys; the dashboard requires dashboard.token`,
  )
}
