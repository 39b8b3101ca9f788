import { createWriteStream, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { type Logger, createLogger } from '../log'

/** Logs to stderr (development) and to `logs/burnrate.log` in userData (a packaged app has no terminal). */
export function desktopLogger(userData: string): Logger {
  let file: ReturnType<typeof createWriteStream> | null = null
  try {
    mkdirSync(join(userData, 'logs'), { recursive: true })
    file = createWriteStream(join(userData, 'logs', 'burnrate.log'), { flags: 'a' })
    file.on('error', () => {
      file = null
    })
  } catch {
    file = null
  }
  return createLogger('info', (line) => {
    process.stderr.write(line)
    file?.write(line)
  })
}
