import type { Config } from '../config/schema'
import { spendCounter, spendMover } from '../budgets/state/pg/call-spend'
import type { ContextHooks } from './build-context'
import type { ServerContext } from './context'

/**
 * Watches the agents' log folders, importing what they log (loaded only when watching: the
 * headless server never reads the import code). Its stop is the first close step; nothing starts
 * once the server is `stopping`.
 */
export function watchLogs(config: Config, context: ServerContext, hooks: ContextHooks, stopping: () => boolean): void {
  const { db, ledger, pricer, log, store } = context
  void import('../import/watcher').then(({ LogWatcher }) => {
    if (stopping()) return
    // PostgreSQL mode: imported calls go to the shared ledger; the import keys stay in this machine's file.
    const target = store.dialect === 'postgres' ? { store, countSpend: spendCounter(config), moveSpend: spendMover(config) } : {}
    // The logs of the agents the admin API connects (agentHome: the user's own, but for tests).
    const w = new LogWatcher({ db, ledger, pricer, log, budgets: () => context.budgets, env: context.agentHome.env, home: context.agentHome.home, ...target }).start()
    hooks.closers.unshift(() => w.stop())
  })
}
