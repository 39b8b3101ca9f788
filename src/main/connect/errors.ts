import { redactText } from './redact'

export type ConnectErrorCode = 'unknown_agent' | 'unsupported' | 'malformed' | 'unreadable' | 'read_only' | 'conflict' | 'not_saved'

/**
 * A connect or disconnect that cannot go ahead; nothing was written (or what was, was put back).
 * Its message, shown by the CLI, the app and the admin API and logged, has any secret from the
 * files it names hinted (./redact.ts).
 */
export class ConnectError extends Error {
  override name = 'ConnectError'
  constructor(
    readonly code: ConnectErrorCode,
    message: string,
    readonly file: string | null = null,
  ) {
    super(redactText(message))
  }
}
