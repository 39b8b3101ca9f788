export type ConnectErrorCode = 'unknown_agent' | 'unsupported' | 'malformed' | 'unreadable' | 'read_only' | 'conflict' | 'not_saved'

/** A connect or disconnect that cannot go ahead; nothing was written (or what was, was put back). */
export class ConnectError extends Error {
  override name = 'ConnectError'
  constructor(
    readonly code: ConnectErrorCode,
    message: string,
    readonly file: string | null = null,
  ) {
    super(message)
  }
}
