/**
 * Connections Burnrate cuts because it is stopping (a stop past its grace, a second signal): the
 * calls under way on them are Burnrate's failure, not their client's, so they are recorded
 * `503 burnrate_stopped` rather than 499 `client_aborted`, and no provider is blamed for them.
 */

/** The reason recorded for a call cut by Burnrate's stop. */
export const STOPPED_REASON = 'burnrate_stopped'
/** The status recorded for it: the service (Burnrate) became unavailable. */
export const STATUS_STOPPED = 503

const STOPPED = Symbol('burnrate.stopped')

type Marked = object & { [STOPPED]?: boolean }

/** Cuts a client connection because Burnrate is stopping; its calls are then recorded as `cutByStop` says. */
export function cutAtStop(socket: { destroy(): void }): void {
  ;(socket as Marked)[STOPPED] = true
  socket.destroy()
}

/** True when `socket` (a call's client connection) was cut by Burnrate's stop. */
export function cutByStop(socket: object | null | undefined): boolean {
  return (socket as Marked | null | undefined)?.[STOPPED] === true
}
