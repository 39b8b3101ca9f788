import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import BetterSqlite from 'better-sqlite3'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { startLedger } from '../support/cli'
import { cannotDropRead, unprivilegedCli } from './unprivileged-cli'

/**
 * A log the user cannot read (a file or folder `sudo claude` left owned by root in
 * ~/.claude/projects) is one log not read, said so; it never hides the others. Before, an
 * unreadable file failed `burnrate import` (exit 1, EACCES) before the files after it, and an
 * unreadable folder made the whole root "no such folder", so `report` and `status`, which
 * import first, silently showed none of that agent's calls. The built CLI runs as a user who
 * cannot read them: root reads everything, so as root it runs through setpriv without the
 * capabilities that let root read what it may not (still root: a clone in a folder only root
 * may enter, as CI's temporary folders are, stays reachable; as `nobody` it was not).
 */
let dir: string
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'burnrate-unreadable-'))
  chmodSync(dir, 0o755)
})
afterAll(() => {
  // (Run as its owner, the folder must be readable again to be removed.)
  chmodSync(join(dir, 'claude/projects/c-sudo-folder'), 0o755)
  rmSync(dir, { recursive: true, force: true })
})

function cli(env: Record<string, string>, ...args: string[]) {
  return unprivilegedCli(join(dir, 'home'), args, env)
}

const line = (id: string) =>
  JSON.stringify({
    type: 'assistant', sessionId: 's', cwd: '/home/dev/shop', timestamp: '2026-11-20T10:00:00.000Z', uuid: `u-${id}`,
    message: { id, model: 'claude-sonnet-4-5-20250929', usage: { input_tokens: 1000, output_tokens: 100 } },
  }) + '\n'

it.skipIf(cannotDropRead)('an unreadable log file or folder is skipped and named; every readable log is imported, by import and by report', async () => {
  const projects = join(dir, 'claude/projects')
  for (const p of ['a-sudo', 'b-mine', 'c-sudo-folder/sub']) mkdirSync(join(projects, p), { recursive: true })
  writeFileSync(join(projects, 'a-sudo/s1.jsonl'), line('msg_hidden_file'))
  writeFileSync(join(projects, 'b-mine/s2.jsonl'), line('msg_mine'))
  writeFileSync(join(projects, 'c-sudo-folder/sub/s3.jsonl'), line('msg_hidden_folder'))
  chmodSync(join(dir, 'claude'), 0o755)
  for (const p of ['', 'a-sudo', 'b-mine', 'c-sudo-folder/sub']) chmodSync(join(projects, p), 0o755)
  for (const f of ['b-mine/s2.jsonl', 'c-sudo-folder/sub/s3.jsonl']) chmodSync(join(projects, f), 0o644)
  chmodSync(join(projects, 'a-sudo/s1.jsonl'), 0o000)
  chmodSync(join(projects, 'c-sudo-folder'), 0o000)
  mkdirSync(join(dir, 'home'))
  for (const d of ['home', 'one', 'two']) {
    mkdirSync(join(dir, d), { recursive: true })
    chmodSync(join(dir, d), 0o777)
  }

  const imported = cli({}, 'import', 'claude-code', '--path', projects, '--data-dir', join(dir, 'one'))
  expect(imported.stderr).toBe('')
  expect(imported.code).toBe(0)
  expect(imported.stdout).toMatch(/could not be read/)
  expect(imported.stdout).toContain(join(projects, 'a-sudo/s1.jsonl'))
  expect(imported.stdout).toContain(join(projects, 'c-sudo-folder'))
  const stored = (data: string) => {
    const db = new BetterSqlite(join(dir, data, 'burnrate.db'), { readonly: true })
    try {
      return db.prepare('SELECT response_id FROM calls').pluck().all()
    } finally {
      db.close()
    }
  }
  expect(stored('one')).toEqual(['msg_mine'])

  // `report` imports every agent's standard folders first: the readable log's call is in it, and stderr says what was not read.
  // (A data folder named that holds no ledger is refused: one is started there.)
  startLedger(join(dir, 'two'))
  const report = cli({ CLAUDE_CONFIG_DIR: join(dir, 'claude') }, 'report', 'daily', '--data-dir', join(dir, 'two'), '--json')
  expect(report.code).toBe(0)
  expect(JSON.parse(report.stdout).totals.requests).toBe(1)
  expect(report.stderr).toMatch(/2 of claude-code's logs could not be read/)
  expect(report.stderr).toContain(join(projects, 'a-sudo/s1.jsonl'))
  expect(stored('two')).toEqual(['msg_mine'])
})
