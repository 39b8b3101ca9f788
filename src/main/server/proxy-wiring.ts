import type { Config } from '../config/schema'
import { batchRecorder } from '../batch/record'
import { spendCounter, spendMover } from '../budgets/state/pg/call-spend'
import type { NetworkOptions } from '../http/network'
import { backgroundSettler } from '../pricing/background'
import { createProxyHandler, type ProxyHandler } from '../proxy/handler'
import type { ContextHooks } from './build-context'
import type { ServerContext } from './context'

/**
 * The proxy's handler over the context: its gate and the observers features add, background
 * answers settled and batch jobs recorded (on PostgreSQL, their spend counted in the shared store).
 */
export function wireProxy(config: Config, context: ServerContext, hooks: ContextHooks, network: NetworkOptions): ProxyHandler {
  const { observers, readingObservers } = hooks
  const postgres = context.store.dialect === 'postgres'
  return createProxyHandler({
    log: context.log,
    network,
    ledger: context.ledger,
    pricer: context.pricer,
    gate: hooks.gate,
    tenants: config.tenants.key_mappings,
    timeouts: config.upstream,
    maxBufferedBytes: config.server.max_buffered_body_mb * 1024 * 1024,
    sessions: context.sessions,
    observeHeaders: (s, status, h, at) => {
      for (const o of observers) o(s, status, h, at)
    },
    observeReading: (s, reading) => {
      for (const o of readingObservers) o(s, reading)
    },
    settleBackground: backgroundSettler(context, postgres ? spendMover(config) : undefined),
    recordBatch: batchRecorder(context, postgres ? spendCounter(config) : undefined),
  })
}
