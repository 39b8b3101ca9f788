import { isDeepStrictEqual } from 'node:util'
import type { Pending, PendingFile, StateStore } from './state'
import type { AgentConnector, ConnectContext } from './types'

/**
 * Whether `now`, a file changed by hand since a change to it was cut off (./recover.ts), holds that
 * change: the values a connect or re-point sets where the file did not hold them before, or the
 * values a disconnect takes out. null: it cannot tell (no key says, or the file does not parse).
 */
export function holdsChange(ctx: ConnectContext, connectors: readonly AgentConnector[], state: StateStore, pending: Pending, f: PendingFile, now: Buffer | null): boolean | null {
  const c = connectors.find((x) => x.id === pending.agent)
  const current = state.read()[pending.agent]
  const after = pending.records[pending.agent]?.files.find((r) => r.path === f.path)
  const before = current?.files.find((r) => r.path === f.path)
  if (!c || !(after ?? before)) return null
  const url = pending.records[pending.agent]?.url ?? current?.url ?? 'http://127.0.0.1:8787'
  const format = c.files(ctx, url).find((x) => x.path === f.path)?.format ?? c.formatOf?.(f.path) ?? c.files(ctx, url)[0].format
  const copy = f.before ? state.readBackupBytes(f.before) : null
  if (f.before && copy === null) return null
  let yes = 0
  let no = 0
  try {
    const was = format.open(copy?.toString('utf8') ?? '')
    const is = format.open(now?.toString('utf8') ?? '')
    if (after) {
      for (const k of after.keys) {
        if (isDeepStrictEqual(was.get(k.key), k.wrote)) continue
        // A value set by hand before, which the change left as it was.
        const old = before?.keys.find((o) => isDeepStrictEqual(o.key, k.key))
        if (old && isDeepStrictEqual(old.wrote, k.wrote)) continue
        if (isDeepStrictEqual(is.get(k.key), k.wrote)) yes++
        else no++
      }
    } else if (before) {
      for (const k of before.keys) {
        if (!isDeepStrictEqual(was.get(k.key), k.wrote)) continue
        if (isDeepStrictEqual(is.get(k.key), k.wrote)) no++
        else yes++
      }
    }
  } catch {
    return null
  }
  return yes > 0 && no === 0 ? true : no > 0 && yes === 0 ? false : null
}
