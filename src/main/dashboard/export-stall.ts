import type { ServerResponse } from 'node:http'

/**
 * Ends an export whose client has stopped taking its bytes without hanging up (a stalled browser
 * tab, a script paused in a debugger). Such a client would otherwise hold what the export holds
 * for ever: on PostgreSQL its snapshot transaction (VACUUM waits on it) and one of the few
 * connections exports may take; on SQLite its export threads and the pages they read ahead.
 *
 * Watched through the socket's idle timer, which any byte moving restarts: a write queued, part
 * of one taken by the client's TCP window (Node suppresses the timeout while a write is under
 * way and its queue shrinks), or a read. When it fires while the response waits for `drain` (the
 * socket's buffer is full and the client takes nothing), the export is stalled: `onStall` runs
 * once and the response is destroyed, so the client sees a cut-off transfer, never a well-formed
 * short file, and the export's own 'close' handling gives back what it held. When it fires
 * while the export is reading its next page (no write waiting), nothing happens; the next write
 * starts the timer again. The bytes are seen as the kernel takes them from the socket's queue:
 * the socket buffers in between (a few MB on a fast link) free up in steps, so a client that
 * reads very slowly (below about a third of those buffers per `ms`) can look stalled too.
 *
 * Returns the function that stops watching (the export ended some other way), restoring the
 * socket's timeout as it was.
 */
export function endWhenStalled(res: ServerResponse, ms: number, onStall: () => void): () => void {
  const socket = res.socket
  if (socket === null || socket.destroyed) return () => {}
  const before = socket.timeout ?? 0
  let watching = true
  const stop = (): void => {
    if (!watching) return
    watching = false
    res.off('timeout', onTimeout)
    res.off('close', stop)
    if (!socket.destroyed) socket.setTimeout(before)
  }
  const onTimeout = (): void => {
    if (!watching || !res.writableNeedDrain) return
    stop()
    onStall()
    res.destroy()
  }
  // Heard on the response: the HTTP server then leaves the socket open when a timeout is not a stall.
  res.on('timeout', onTimeout)
  res.on('close', stop)
  socket.setTimeout(ms)
  return stop
}
