import { mkdtempSync, rmSync } from 'node:fs'
import { homedir, tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll } from 'vitest'
import { OWN_ENV } from './own-env'

/** The home this test process started with (the developer's own, outside a test). */
const STARTING_HOME = homedir()

/**
 * A setup file of every test process (vitest.config.ts, test/real-agents/vitest.config.ts): the
 * process runs with a fresh, empty home folder of its own (HOME, and USERPROFILE on Windows, which
 * os.homedir() reads), removed after the file, and without the variables above, so a test that
 * connects an agent, imports or watches logs, or runs the CLI or the desktop app without naming a
 * home of its own reads and edits files there, never the developer's ~/.claude, ~/.codex,
 * ~/.gemini, opencode config, shell profile or agent logs. Children spawned with process.env get it
 * too. Tool caches (Playwright's browsers, electron-builder's downloads) stay where they were.
 */
const home = mkdtempSync(join(tmpdir(), 'burnrate-test-home-'))
if (!process.env.XDG_CACHE_HOME) process.env.XDG_CACHE_HOME = join(STARTING_HOME, '.cache')
for (const k of OWN_ENV) delete process.env[k]
process.env.HOME = home
process.env.USERPROFILE = home

afterAll(() => {
  rmSync(home, { recursive: true, force: true })
})
