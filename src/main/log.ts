/**
 * The one logger of the server core: plain lines on stderr. Callers pass facts, never request
 * headers or bodies, so no API key or admin token can reach a log.
 */
export type Level = 'debug' | 'info' | 'warn' | 'error'

export interface Logger {
  debug(msg: string): void
  info(msg: string): void
  warn(msg: string): void
  error(msg: string): void
}

const ORDER: Record<Level, number> = { debug: 0, info: 1, warn: 2, error: 3 }

export function createLogger(level: Level = 'info', write: (line: string) => void = (l) => process.stderr.write(l)): Logger {
  const min = ORDER[level]
  const at = (l: Level) => (msg: string) => {
    if (ORDER[l] >= min) write(`${new Date().toISOString()} ${l.padEnd(5)} ${msg}\n`)
  }
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') }
}

export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} }
