/**
 * The sessions agents said another started, remembered in memory so that calls naming only their
 * own session still land under the one that started them: a Claude Code teammate's token
 * counting sends only its own `X-Claude-Code-Session-Id` (its messages name the lead's session),
 * and an opencode sub-agent started by a sub-agent names the middle one as its parent, whose own
 * calls are recorded under the root. Keyed by agent; the most recent MAX_REMEMBERED only.
 */

export const MAX_REMEMBERED = 10_000
const roots = new Map<string, string>()

/** The session `id` of `agent` is recorded under: the root a call of it named before, else itself. */
export function rootOf(agent: string, id: string): string {
  let at = id
  // A root remembered before may have been named a child since: a few hops, never round a cycle.
  for (let hop = 0; hop < 8; hop++) {
    const up = roots.get(`${agent}\0${at}`)
    if (up === undefined || up === id) break
    at = up
  }
  return at
}

/**
 * A call of `agent`'s session `child` named `parent` as the session that started it: the root it
 * is recorded under (the parent's own root), remembered for the child's later calls.
 */
export function startedBy(agent: string, child: string, parent: string): string {
  const root = rootOf(agent, parent)
  if (!child || root === child) return root
  const key = `${agent}\0${child}`
  roots.delete(key)
  roots.set(key, root)
  if (roots.size > MAX_REMEMBERED) roots.delete(roots.keys().next().value as string)
  return root
}
