import { chmodSync, cpSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import BetterSqlite from 'better-sqlite3'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { cannotDropRead, openAll, unprivilegedCli } from './unprivileged-cli'

/**
 * A forked Claude Code subagent's transcript logs no request of its own: its calls take the login
 * its session's transcript logged (test/fixtures/claude-code-fork, a Claude account's session).
 * That transcript unreadable (one `sudo` left owned by root), the fork's plan calls were recorded
 * as API money, and stayed so once it could be read (the fork's transcript, unchanged, was not
 * read again). The fork's transcript is now named as unreadable and read at the next import,
 * with its session's login. The built CLI runs as a user who cannot read it (as root: through
 * setpriv without the capabilities that let root read what it may not).
 */
let dir: string
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'burnrate-claude-fork-unreadable-'))
  chmodSync(dir, 0o755)
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

function cli(...args: string[]) {
  return unprivilegedCli(join(dir, 'home'), args)
}

it.skipIf(cannotDropRead)("a fork's calls wait for its session's transcript to be readable, never recorded as money on a guess", () => {
  const projects = join(dir, 'projects')
  cpSync(resolve(__dirname, '../fixtures/claude-code-fork/projects'), projects, { recursive: true })
  openAll(projects)
  const session = join(projects, '-home-dev-shop/4e8b1f2a-9c3d-4a7e-b5f6-1d2c3b4a5e6f.jsonl')
  const fork = join(projects, '-home-dev-shop/4e8b1f2a-9c3d-4a7e-b5f6-1d2c3b4a5e6f/subagents/agent-a5c81e0f3b9d2746a.jsonl')
  chmodSync(session, 0o000)
  for (const d of ['home', 'data']) {
    mkdirSync(join(dir, d))
    chmodSync(join(dir, d), 0o777)
  }
  const data = join(dir, 'data')
  const run = () => {
    const r = cli('import', 'claude-code', '--path', projects, '--data-dir', data, '--json')
    expect(r.stderr).toBe('')
    expect(r.code).toBe(0)
    return JSON.parse(r.stdout).results[0]
  }
  const rows = () => {
    const db = new BetterSqlite(join(data, 'burnrate.db'), { readonly: true })
    try {
      return db.prepare('SELECT response_id, billing FROM calls ORDER BY response_id').all()
    } finally {
      db.close()
    }
  }
  // The general-purpose subagent, which logged its own requests, is imported; the session and its fork are named.
  const before = run()
  expect(before.unreadable.sort()).toEqual([session, fork].sort())
  expect(rows()).toEqual([{ response_id: 'msg_01PlainSubA', billing: 'subscription' }])

  // Its owner gives the session's transcript back: the fork's calls are the plan's, as the session's own.
  chmodSync(session, 0o644)
  const after = run()
  expect(after.unreadable).toEqual([])
  expect(rows()).toEqual([
    { response_id: 'msg_01ForkMainA', billing: 'subscription' },
    { response_id: 'msg_01ForkMainB', billing: 'subscription' },
    { response_id: 'msg_01ForkSubA', billing: 'subscription' },
    { response_id: 'msg_01ForkSubB', billing: 'subscription' },
    { response_id: 'msg_01PlainSubA', billing: 'subscription' },
  ])
})
