import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { cannotDropRead, unprivilegedCli } from './unprivileged-cli'

/**
 * A log folder itself that the user cannot read (`sudo claude` once made ~/.claude owned by root,
 * or a `--path` folder left so) was taken for one that is not there: `burnrate import claude-code`
 * said `no logs`, and `--path` failed with `no such folder: <it>`, sending one looking for a typo
 * in a path that is right, while the README says a folder that cannot be read is named as such.
 * It is now named as unreadable (`unreadable` in --json), as a folder below it is. The built CLI,
 * as a user who cannot read it (as root: through setpriv without the capabilities that let root
 * read what it may not, as test/import/unreadable.test.ts).
 */
let dir: string
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'burnrate-unreadable-root-'))
  chmodSync(dir, 0o755)
})
afterAll(() => {
  for (const d of ['home/.claude', 'logs']) chmodSync(join(dir, d), 0o755)
  rmSync(dir, { recursive: true, force: true })
})

function cli(...args: string[]) {
  return unprivilegedCli(join(dir, 'home'), args)
}

const line = JSON.stringify({
  type: 'assistant', sessionId: 's', cwd: '/home/dev/shop', timestamp: '2026-11-20T10:00:00.000Z', uuid: 'u-1',
  message: { id: 'msg_root_1', model: 'claude-sonnet-4-5-20250929', usage: { input_tokens: 1000, output_tokens: 100 } },
}) + '\n'

it.skipIf(cannotDropRead)('a log folder that cannot be read is named as unreadable, not as missing', () => {
  const logs = join(dir, 'logs')
  mkdirSync(join(logs, 'p'), { recursive: true })
  writeFileSync(join(logs, 'p/s.jsonl'), line)
  chmodSync(join(logs, 'p'), 0o755)
  chmodSync(join(logs, 'p/s.jsonl'), 0o644)
  mkdirSync(join(dir, 'home/.claude/projects'), { recursive: true })
  for (const d of ['home', 'data']) {
    mkdirSync(join(dir, d), { recursive: true })
    chmodSync(join(dir, d), 0o777)
  }
  chmodSync(logs, 0o000)
  chmodSync(join(dir, 'home/.claude'), 0o000)
  const data = join(dir, 'data')

  const given = cli('import', 'claude-code', '--path', logs, '--data-dir', data)
  expect(given.stderr).not.toContain('no such folder')
  expect(given.stderr).toBe('')
  expect(given.code).toBe(0)
  expect(given.stdout).toContain(`1 of claude-code's logs could not be read (no permission, or in use?): ${logs}`)

  // The standard folders: ~/.config/claude/projects is not there, ~/.claude/projects cannot be read.
  const standard = cli('import', 'claude-code', '--data-dir', data, '--json')
  expect(standard.code).toBe(0)
  const s = JSON.parse(standard.stdout).results[0]
  expect(s.missing).toEqual([join(dir, 'home/.config/claude/projects')])
  expect(s.unreadable).toEqual([join(dir, 'home/.claude/projects')])
  const table = cli('import', 'claude-code', '--data-dir', data)
  expect(table.stdout).not.toContain('no logs')
  expect(table.stdout).toContain(join(dir, 'home/.claude/projects'))

  // Given back: its calls are imported.
  chmodSync(logs, 0o755)
  const after = cli('import', 'claude-code', '--path', logs, '--data-dir', data, '--json')
  expect(after.code).toBe(0)
  expect(JSON.parse(after.stdout).results[0]).toMatchObject({ imported: 1, unreadable: [], missing: [] })
})
