import { chmodSync, createWriteStream, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { type Logger, createLogger } from '../log'

/** As the data folder and the database (ledger/db.ts): only the user may read them. */
const DIR_MODE = 0o700
const FILE_MODE = 0o600

/**
 * Logs to stderr (development) and to `logs/burnrate.log` in userData (a packaged app has no
 * terminal). The folder and the file are private to the user, like the data folder: the log
 * names budget rules (key patterns), tenants and agents. An existing log made by an older
 * version (0644) is made private too.
 */
export function desktopLogger(userData: string): Logger {
  let file: ReturnType<typeof createWriteStream> | null = null
  try {
    const dir = join(userData, 'logs')
    const path = join(dir, 'burnrate.log')
    mkdirSync(dir, { recursive: true, mode: DIR_MODE })
    if (process.platform !== 'win32') {
      chmodSync(dir, DIR_MODE)
      try {
        chmodSync(path, FILE_MODE)
      } catch {
        // not there yet: created below with FILE_MODE
      }
    }
    file = createWriteStream(path, { flags: 'a', mode: FILE_MODE })
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
