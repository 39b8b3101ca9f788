/** What every command can trust about `burnrate`'s exit status (documented in the README). */
export const EXIT = {
  /** The command did what it was asked. */
  ok: 0,
  /** It could not (no ledger, server refused, unreadable folder...); stderr says why. */
  failed: 1,
  /** The command line itself is wrong (unknown command or option, bad value). */
  usage: 2,
} as const

/** A failure meant for the person at the terminal: printed as `burnrate: <message>`, exits with `exitCode`. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number = EXIT.failed,
  ) {
    super(message)
  }
}

export interface Writable {
  /** Text, or bytes passed through as they are (an export's UTF-8, cut anywhere by the network). */
  write(s: string | Uint8Array): unknown
  /** A stream's 'drain', when it has one: a writer that got `false` waits for it. */
  once?(event: 'drain', listener: () => void): unknown
  /** Its 'error' and 'close', when it has them: a writer waiting for 'drain' stops on them (./stdout-sink.ts). */
  on?(event: 'error' | 'close', listener: (err: Error) => void): unknown
  off?(event: 'error' | 'close', listener: (err: Error) => void): unknown
  isTTY?: boolean
  columns?: number
}

/** What a command gets besides its own options. */
export interface CliContext {
  /** The built ledger write thread, for `serve`. */
  ledgerWorker?: URL
  stdout: Writable
  stderr: Writable
  env: NodeJS.ProcessEnv
}
