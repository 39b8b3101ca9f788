import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterEach, expect, it } from 'vitest'
import { type Migration, migrate } from './migrations'

/**
 * Two processes upgrading one database file at once (a `burnrate import` with no server holding
 * the folder, and a server starting that instant): the one that read the schema version first
 * must not run again a migration the other has run since. Before, the second ran it anyway
 * (a table made twice: start-up stopped).
 */

const dirs: string[] = []
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})

const MIGRATIONS: Migration[] = [
  { version: 1, description: 'a table', up: (db) => db.exec('CREATE TABLE t (a INTEGER)') },
  { version: 2, description: 'a column', up: (db) => db.exec('ALTER TABLE t ADD COLUMN b INTEGER') },
]

it('a migration another connection ran after this one read the version is not run again', () => {
  const dir = mkdtempSync(join(tmpdir(), 'burnrate-migrate-race-'))
  dirs.push(dir)
  const a = new Database(join(dir, 'burnrate.db'))
  const b = new Database(join(dir, 'burnrate.db'))
  b.pragma('busy_timeout = 1000')
  // The other process upgrades just after `a` has read the version (the list's `reduce`, read
  // for the latest version, runs after the current one was read).
  let raced = false
  const racing = Object.assign([...MIGRATIONS], {
    reduce(this: Migration[], ...args: Parameters<Migration[]['reduce']>) {
      if (!raced) {
        raced = true
        expect(migrate(b, MIGRATIONS)).toBe(2)
      }
      return Array.prototype.reduce.apply(this, args as never)
    },
  })
  try {
    expect(migrate(a, racing)).toBe(2)
    expect(raced).toBe(true)
    expect(a.pragma('user_version', { simple: true })).toBe(2)
    expect(a.prepare('SELECT name FROM pragma_table_info(?)').pluck().all('t')).toEqual(['a', 'b'])
  } finally {
    a.close()
    b.close()
  }
})
