import { cpSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import type Database from 'better-sqlite3'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { importLogs } from '../../src/main/import/importer'
import { openDatabase } from '../../src/main/ledger/db'
import { Pricer } from '../../src/main/pricing/price'

/**
 * Claude Code on Amazon Bedrock in AWS GovCloud (AWS_REGION us-gov-west-1) sends, and logs, its
 * models under the `us-gov.` inference profiles (Claude Code 2.1.332 maps a `us-gov-` region to
 * that prefix, as `us-` to `us.`): test/fixtures/claude-code-govcloud holds one answer of each,
 * the same counts. Both are Bedrock's calls, priced at AWS's prices as the proxy prices them.
 */
let dir: string
let db: Database.Database
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'burnrate-claude-govcloud-'))
  cpSync(resolve(__dirname, '../fixtures/claude-code-govcloud/projects'), join(dir, 'projects'), { recursive: true })
  db = openDatabase(join(dir, 'burnrate.db'))
})
afterAll(() => {
  db.close()
  rmSync(dir, { recursive: true, force: true })
})

it("a GovCloud inference profile's call (us-gov.anthropic.…) is Bedrock's, priced", async () => {
  const s = await importLogs(db, { agent: 'claude-code', paths: [join(dir, 'projects')], pricer: new Pricer() })
  expect(s).toMatchObject({ files: 1, imported: 2 })
  const rows = db.prepare('SELECT response_id, provider, model, endpoint, priced, cost_usd FROM calls ORDER BY ts').all() as any[]
  expect(rows.map((r) => [r.response_id, r.provider, r.endpoint, r.priced])).toEqual([
    ['msg_bdrk_01GovA', 'bedrock', 'invoke', 1],
    ['msg_bdrk_01UsB', 'bedrock', 'invoke', 1],
  ])
  expect(rows[0].cost_usd).toBeGreaterThan(0)
})
