import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type Database from 'better-sqlite3'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { importLogs } from '../../src/main/import/importer'
import { openDatabase } from '../../src/main/ledger/db'
import { INSERT_CALL_SQL, callValues } from '../../src/main/ledger/columns'
import type { CallRecord } from '../../src/main/ledger/record'
import { Pricer } from '../../src/main/pricing/price'
import { makeCall } from '../dashboard/seed'
import { writeCodexRollout } from '../support/codex-rollout'

/**
 * A team server that also imports its own machine's agent logs (the desktop app as a team server,
 * or `burnrate import` on its folder): a call a member's Burnrate sent it (`origin_id` set) was
 * made on the member's machine, and is never the twin of a call in this machine's logs, however
 * alike their counts or ids. Builds before this one took it for one, and the logged call (money
 * of this machine's) was never stored: missing from every total.
 */
const pricer = new Pricer()
let dir: string
let db: Database.Database
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'burnrate-import-members-'))
  db = openDatabase(join(dir, 'burnrate.db'))
})
afterEach(() => {
  db.close()
  rmSync(dir, { recursive: true, force: true })
})

const T = Date.parse('2026-11-20T10:00:00.000Z')
const NOW = T + 3_600_000

/** A call member alice's Burnrate proxied and sent here (as the ingest stores it: member and origin_id set). */
function ingested(originId: number, over: Partial<CallRecord> = {}): void {
  const r = makeCall({
    ts: T, provider: 'openai', model: 'gpt-5-codex', endpoint: 'responses', api_key_hash: 'h', key_hint: 'k', agent: 'codex', streamed: true,
    input_tokens: 5000, output_tokens: 400, cost_usd: 0.01, latency_ms: 10, response_id: '', source: 'proxy', billing: 'api', member: 'alice', ...over,
  })
  const id = Number(db.prepare(INSERT_CALL_SQL).run(callValues(r, [])).lastInsertRowid)
  db.prepare('UPDATE calls SET origin_id = ? WHERE id = ?').run(originId, id)
}

describe("a team server importing its own machine's logs", () => {
  it("stores a logged call whose counts a member's call (sent here) shares: that call is not its twin", async () => {
    ingested(7)
    const root = join(dir, 'codex')
    writeCodexRollout(root, T + 2000)
    const s = await importLogs(db, { agent: 'codex', paths: [root], pricer, now: NOW })
    expect(s).toMatchObject({ matched: 0, imported: 1 })
    const rows = db.prepare('SELECT member, source, origin_id FROM calls ORDER BY id').all()
    expect(rows).toEqual([
      { member: 'alice', source: 'proxy', origin_id: 7 },
      { member: '', source: 'import', origin_id: null },
    ])
  })
})
