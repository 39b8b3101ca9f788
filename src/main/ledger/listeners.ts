/**
 * Listeners kept per owner (a ledger): `on` subscribes and returns the unsubscribe, `emit` calls
 * every listener of that owner, each one's failure its own. For what a ledger's changes tell the
 * rest of the process outside its own `onCall` (revised calls, costs that moved).
 */
export function listenersPerOwner<T>() {
  const byOwner = new WeakMap<object, Set<(value: T) => void>>()
  return {
    on(owner: object, fn: (value: T) => void): () => void {
      let set = byOwner.get(owner)
      if (!set) byOwner.set(owner, (set = new Set()))
      set.add(fn)
      return () => set.delete(fn)
    },
    emit(owner: object, value: T): void {
      for (const fn of byOwner.get(owner) ?? []) {
        try {
          fn(value)
        } catch {
          // a listener's failure is its own
        }
      }
    },
  }
}
