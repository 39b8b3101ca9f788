import { mkdtempSync, rmSync } from 'node:fs'
import { homedir, tmpdir } from 'node:os'
import { join } from 'node:path'
import { OWN_ENV } from '../support/own-env'

/**
 * Imported first by the bench and soak scripts (outside vitest, so test/support/home.ts is not
 * their setup): they and the Burnrate processes they start run with a fresh, empty home folder
 * and without the variables that lead to the developer's own files or Burnrate, as every test
 * process does. None of them connects an agent or watches logs today; one that did would read
 * and edit the developer's ~/.claude, ~/.codex or shell profile. Tool caches stay where they were.
 */
const starting = homedir()
const home = mkdtempSync(join(tmpdir(), 'burnrate-bench-home-'))
if (!process.env.XDG_CACHE_HOME) process.env.XDG_CACHE_HOME = join(starting, '.cache')
for (const k of OWN_ENV) delete process.env[k]
process.env.HOME = home
process.env.USERPROFILE = home
process.on('exit', () => rmSync(home, { recursive: true, force: true }))
