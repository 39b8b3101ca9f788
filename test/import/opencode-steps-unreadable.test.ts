import { chmodSync, cpSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import BetterSqlite from 'better-sqlite3'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { cannotDropRead, openAll, unprivilegedCli } from './unprivileged-cli'

/**
 * An older opencode's message of several steps (test/fixtures/opencode-steps: msg_90f0e27d…, three
 * steps, three API calls) whose part folder the user could not read (one `sudo` left owned by
 * root) was imported as its last step's one call and recorded as read: its other steps were
 * never imported, even once the folder could be read. The message is now named as unreadable and
 * read, every step, at the next import. The built CLI runs as a user who cannot read it (as root:
 * through setpriv without the capabilities that let root read what it may not).
 */
let dir: string
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'burnrate-opencode-steps-unreadable-'))
  chmodSync(dir, 0o755)
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

function cli(...args: string[]) {
  return unprivilegedCli(join(dir, 'home'), args)
}

it.skipIf(cannotDropRead)("a several-step message whose part folder cannot be read is named, and each of its steps imported once it can be", () => {
  const oc = join(dir, 'opencode')
  cpSync(resolve(__dirname, '../fixtures/opencode-steps'), oc, { recursive: true })
  openAll(oc)
  const parts = join(oc, 'storage/part/msg_90f0e27d0001WD25RQ4F5ZR3qa')
  const msg = join(oc, 'storage/message/ses_6b3d9f0e2a/msg_90f0e27d0001WD25RQ4F5ZR3qa.json')
  chmodSync(parts, 0o000)
  for (const d of ['home', 'data']) {
    mkdirSync(join(dir, d))
    chmodSync(join(dir, d), 0o777)
  }
  const data = join(dir, 'data')
  const run = () => {
    const r = cli('import', 'opencode', '--path', oc, '--data-dir', data, '--json')
    expect(r.stderr).toBe('')
    expect(r.code).toBe(0)
    return JSON.parse(r.stdout).results[0]
  }
  // Today's one-step message imported; the several-step one named, not taken as one call.
  const before = run()
  expect([before.imported, before.unreadable]).toEqual([1, [msg]])

  // Its owner gives the folder back (neither the message's size nor its mtime changes): every step imported.
  chmodSync(parts, 0o755)
  const after = run()
  expect([after.imported, after.unreadable]).toEqual([3, []])
  const db = new BetterSqlite(join(data, 'burnrate.db'), { readonly: true })
  try {
    expect(db.prepare('SELECT COUNT(*) AS n FROM calls').get()).toEqual({ n: 4 })
  } finally {
    db.close()
  }
})
