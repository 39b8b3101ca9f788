import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, expect, it } from 'vitest'
import { ProviderStats } from '../../src/main/admin/provider-stats'
import { openDatabase } from '../../src/main/ledger/db'
import { Ledger } from '../../src/main/ledger/ledger'
import { SqliteStore } from '../../src/main/storage/sqlite'
import { startOfDay } from '../../src/main/time/zone'
import { makeCall } from './seed'

const TZ = 'Asia/Kolkata'
let dir = ''
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true })
})

it("seeds the day of the instant it is given, not the day the clock is in (a start-up read answered after local midnight)", async () => {
  dir = mkdtempSync(join(tmpdir(), 'burnrate-provider-stats-'))
  const db = openDatabase(join(dir, 'ledger.db'))
  const ledger = new Ledger(db, { flushIntervalMs: 60_000, maxPending: 1_000, timezone: TZ })
  // `at` is 22:00 local time yesterday: its day is over by the real clock.
  const at = startOfDay(Date.now(), TZ) - 2 * 3_600_000
  for (let i = 0; i < 5; i++) ledger.record(makeCall({ ts: at - 60_000 * (i + 1), provider: i < 3 ? 'openai' : 'anthropic', status: i === 4 ? 500 : 200 }))
  ledger.record(makeCall({ ts: startOfDay(at, TZ) - 1, provider: 'openai' })) // the day before: not counted
  expect(ledger.close()).toBe(true)
  const stats = new ProviderStats(TZ)
  await stats.seed(new SqliteStore(db), at)
  expect(stats.get('openai', at)?.requests).toBe(3)
  expect(stats.get('anthropic', at)).toMatchObject({ requests: 2, errors: 1, lastError: 'HTTP 500' })
  db.close()
})
