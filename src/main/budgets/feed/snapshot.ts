/** A transaction snapshot as `pg_current_snapshot()` prints it: `xmin:xmax:xip,xip,…`. */
export interface Snapshot {
  xmin: number
  xmax: number
  inProgress: Set<number>
}

export function parseSnapshot(text: string): Snapshot {
  const [xmin, xmax, xip] = text.split(':')
  return { xmin: Number(xmin), xmax: Number(xmax), inProgress: new Set(xip ? xip.split(',').map(Number) : []) }
}

/** Whether the committed transaction `xid` is visible in `s` (PostgreSQL's own rule). */
export function visibleIn(xid: number, s: Snapshot): boolean {
  if (xid < s.xmin) return true
  if (xid >= s.xmax) return false
  return !s.inProgress.has(xid)
}
