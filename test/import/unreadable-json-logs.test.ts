import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import BetterSqlite from 'better-sqlite3'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { cannotDropRead, unprivilegedCli } from './unprivileged-cli'

/**
 * A log read whole rather than a line at a time (an opencode message file, its opencode.db, a Gemini
 * CLI chat of the older `.json` kind) that the user cannot read (one `sudo` left owned by root) was
 * counted as a bad line, not named as unreadable, and taken as read: once its owner gave it back,
 * its size and mtime unchanged (chmod and chown change neither), the next import skipped it as
 * unchanged, and its calls were never imported. It is now named as unreadable, and imported once
 * it can be read. The built CLI runs as a user who cannot read it (as root: through setpriv
 * without the capabilities that let root read what it may not, as test/import/unreadable.test.ts).
 */
let dir: string
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'burnrate-unreadable-json-'))
  chmodSync(dir, 0o755)
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

function cli(...args: string[]) {
  return unprivilegedCli(join(dir, 'home'), args)
}

const T = Date.parse('2026-11-20T10:00:00.000Z')
const message = (id: string, at: number) => ({
  id, role: 'assistant', sessionID: 'ses_1', providerID: 'anthropic', modelID: 'claude-sonnet-4-5-20250929', path: { cwd: '/home/dev/x' },
  time: { created: at }, tokens: { input: 1200, output: 300, reasoning: 0, cache: { read: 0, write: 0 } }, cost: 0.0081,
})

/** Every folder on the way readable by all, so only the file itself is refused. */
function open(...paths: string[]): void {
  for (const p of paths) chmodSync(p, 0o755)
}

it.skipIf(cannotDropRead)('an unreadable opencode message, opencode.db or Gemini CLI .json chat is named, and imported once it can be read', () => {
  // opencode's message files, and its database, each in a folder of its own.
  const files = join(dir, 'oc-files')
  mkdirSync(join(files, 'storage/message/ses_1'), { recursive: true })
  const msg = join(files, 'storage/message/ses_1/msg_1.json')
  writeFileSync(msg, JSON.stringify(message('msg_1', T)))
  open(files, join(files, 'storage'), join(files, 'storage/message'), join(files, 'storage/message/ses_1'))

  const dbRoot = join(dir, 'oc-db')
  mkdirSync(dbRoot)
  const dbFile = join(dbRoot, 'opencode.db')
  const oc = new BetterSqlite(dbFile)
  oc.exec('CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, data TEXT NOT NULL)')
  const { id, sessionID, ...m } = message('msg_2', T + 60_000)
  oc.prepare('INSERT INTO message VALUES (?, ?, ?)').run(id, sessionID, JSON.stringify(m))
  oc.close()
  open(dbRoot)

  // Gemini CLI's older chat file: one JSON document.
  const gemini = join(dir, 'gemini')
  mkdirSync(join(gemini, 'shop/chats'), { recursive: true })
  const chat = join(gemini, 'shop/chats/session-2026-11-20T10-00-aaaa.json')
  writeFileSync(
    chat,
    JSON.stringify({
      sessionId: 'g1',
      messages: [{ id: 'gm_1', type: 'gemini', timestamp: '2026-11-20T10:00:00.000Z', model: 'gemini-2.5-pro', tokens: { input: 1000, output: 100, cached: 0, thoughts: 0, tool: 0 } }],
    }),
  )
  open(gemini, join(gemini, 'shop'), join(gemini, 'shop/chats'))
  for (const f of [msg, dbFile, chat]) chmodSync(f, 0o000)
  for (const d of ['home', 'data']) {
    mkdirSync(join(dir, d))
    chmodSync(join(dir, d), 0o777)
  }
  const data = join(dir, 'data')

  const run = (agent: string, path: string) => {
    const r = cli('import', agent, '--path', path, '--data-dir', data, '--json')
    expect(r.stderr).toBe('')
    expect(r.code).toBe(0)
    return JSON.parse(r.stdout).results[0]
  }
  const before = [run('opencode', files), run('opencode', dbRoot), run('gemini-cli', gemini)]
  expect(before.map((s) => [s.imported, s.skipped_lines, s.unreadable])).toEqual([
    [0, 0, [msg]],
    [0, 0, [dbFile]],
    [0, 0, [chat]],
  ])

  // Its owner gives them back (chmod changes neither their size nor their mtime): imported now.
  for (const f of [msg, dbFile, chat]) chmodSync(f, 0o644)
  const after = [run('opencode', files), run('opencode', dbRoot), run('gemini-cli', gemini)]
  expect(after.map((s) => [s.imported, s.skipped_lines, s.unreadable])).toEqual([
    [1, 0, []],
    [1, 0, []],
    [1, 0, []],
  ])
  const db = new BetterSqlite(join(data, 'burnrate.db'), { readonly: true })
  try {
    expect(db.prepare('SELECT agent, input_tokens FROM calls ORDER BY agent, id').all()).toEqual([
      { agent: 'gemini-cli', input_tokens: 1000 },
      { agent: 'opencode', input_tokens: 1200 },
      { agent: 'opencode', input_tokens: 1200 },
    ])
  } finally {
    db.close()
  }
})
