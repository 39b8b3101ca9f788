import type { ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { afterEach, beforeEach } from 'vitest'
import { bundledChild, connectStopped, killChildren, type Stopped } from './connect-child'

/** The set-up the tests of connects finding a crash's lock at once share (./connect-lock-takeover.test.ts, ./connect-lock-three.test.ts). */

const NO_LINKS = pathToFileURL(resolve(__dirname, 'no-links-preload.mjs')).href
const URL = 'http://127.0.0.1:8787'
export const ENV = { PATH: '', SHELL: '/bin/zsh' }
export const CLAUDE = '{\n  "model": "opus"\n}\n'
export const CODEX = 'model = "o3"\n'

/** Where a connect-stop-at child stops: at `op` on `path` (`under`: on a path under it; `prefix`: on one it begins). */
export type StopAt = { op: string; path: string; under?: boolean; prefix?: boolean }

/**
 * The connect-stop-at child bundled for the test file (in a folder named from `prefix`), and for
 * each test a home of its own (`dirs`: it and its data folder), its children killed after.
 * `stopped`: a connect in its own process, stopped at each of `stopAt` in turn; `noLinks`: link()
 * fails in the data folder with that code (a FAT drive: ./no-links-preload.mjs).
 */
export function lockConnects(prefix: string): { dirs: () => { home: string; dataDir: string }; stopped: (agent: string, stopAt: StopAt | StopAt[], noLinks?: string) => Promise<Stopped> } {
  const child = bundledChild('connect-stop-at', prefix)
  let home = ''
  let dataDir = ''
  const children: ChildProcess[] = []
  beforeEach(() => {
    home = mkdtempSync(join(tmpdir(), `${prefix}home-`))
    dataDir = join(home, 'burnrate-data')
  })
  afterEach(() => {
    killChildren(children)
    rmSync(home, { recursive: true, force: true })
  })
  const stopped = (agent: string, stopAt: StopAt | StopAt[], noLinks?: string) =>
    connectStopped(child(), [home, dataDir, agent, URL, JSON.stringify(stopAt), JSON.stringify(ENV)], children, {
      node: noLinks ? ['--import', NO_LINKS] : [],
      env: noLinks ? { BURNRATE_TEST_LINK_ERROR: noLinks, BURNRATE_TEST_LINK_DIR: dataDir } : {},
    })
  return { dirs: () => ({ home, dataDir }), stopped }
}
