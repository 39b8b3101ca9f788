/**
 * Work that start-up leaves for later (the API app, the price library and its data, the
 * WebSocket library), loaded when first asked for: `load` runs on the first call, and every call
 * until it settles shares its promise; once it has succeeded, every later call gets that result.
 * A failure goes to the callers that shared it and is not kept: the next call runs `load` again,
 * so one failed load does not leave the server without it for good.
 */
export function loadOnce<T>(load: () => Promise<T>): () => Promise<T> {
  let pending: Promise<T> | null = null
  return () => {
    if (pending) return pending
    const p = load()
    pending = p
    p.catch(() => {
      if (pending === p) pending = null
    })
    return p
  }
}
