import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach } from 'vitest'
import { eventually } from '../support/http'
import { app, resetElectron, state } from './fake-electron'

/**
 * A fresh faked Electron, its user data in a temporary folder, for each test of the file; after
 * each, the app quit (if the test left it running) and the folder removed. Read `dir` inside a test.
 */
export function appEachTest(prefix: string): { readonly dir: string } {
  let dir = ''
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), prefix))
    resetElectron(dir)
  })
  afterEach(async () => {
    if (!state.exited) {
      app.quit()
      await eventually(() => state.exited)
    }
    rmSync(dir, { recursive: true, force: true })
  })
  return {
    get dir() {
      return dir
    },
  }
}
