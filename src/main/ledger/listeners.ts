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
      callEach(byOwner.get(owner) ?? [], value)
    },
  }
}

/** Calls each listener with `value`; a listener's failure is its own (the others are called, the caller goes on). */
export function callEach<T>(listeners: Iterable<(value: T) => void>, value: T): void {
  for (const l of listeners) {
    try {
      l(value)
    } catch {
      // a listener's failure is its own
    }
  }
}
