import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { stringify } from 'yaml'
import { insertCalls } from '../../src/main/ledger/pg/insert'
import type { CallRecord } from '../../src/main/ledger/record'
import { ensurePostgresSchema } from '../../src/main/storage/postgres-migrations'
import { ROOT } from '../e2e/browser'
import { makeCall } from '../dashboard/seed'
import { pipedIntoHead } from '../support/cli'
import { until, usePostgres } from '../support/pg-harness'

/**
 * `burnrate export --local | head -1` on a PostgreSQL ledger: the export reads in one snapshot
 * transaction on its own connection. When the reader exits early the CLI exits 0 with nothing on
 * stderr, and it ends that transaction and closes its connection itself: PostgreSQL does not see
 * its client vanish (its log says "unexpected EOF on client connection with an open transaction"
 * when the CLI dies between two pages, "could not send data to client" inside one), and no
 * backend of the CLI's is left.
 */
const h = usePostgres({ upstream: false })
const CLI = join(ROOT, 'out/main/cli.js')
const N = 20_000

describe('burnrate export --local on PostgreSQL into a reader that closes early', () => {
  it('exits 0, says nothing, and ends its snapshot transaction and connection itself', async () => {
    const url = h.database()
    const store = h.store(url)
    await ensurePostgresSchema(store)
    const now = Date.now()
    const seeds: CallRecord[] = []
    for (let i = 0; i < N; i++) seeds.push({ ...makeCall({ ts: now - 20 * 3_600_000 + i * 1000, session: `s-${i}` }), call_key: `seed.${i}` })
    for (let i = 0; i < N; i += 5_000) await store.transaction((tx) => insertCalls(tx, seeds.slice(i, i + 5_000)))
    const dir = h.tempDir('burnrate-pg-cli-head-')
    const config = join(dir, 'config.yaml')
    writeFileSync(config, stringify({ timezone: 'UTC', storage: { url } }))
    const env = { ...process.env, HOME: dir, BURNRATE_DATABASE_URL: '' }

    for (const format of ['csv', 'json']) {
      const r = await pipedIntoHead(CLI, ['export', '--local', '--config', config, '--data-dir', dir, '--format', format], env)
      expect(r).toEqual({ status: 0, signal: null, stderr: '', line: expect.stringMatching(format === 'csv' ? /^id,t,/ : /^\{/) })
    }
    // The CLI's backends are gone (PostgreSQL may take a moment to notice a closed socket).
    await until('no burnrate-cli connection left', async () => {
      const row = await store.get<{ n: number }>(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'burnrate-cli'`)
      return row!.n === 0
    })
    // What PostgreSQL logged of its clients: nothing, each closed its connection as it should.
    expect(readFileSync(h.pg.log, 'utf8').split('\n').filter((l) => /client/.test(l))).toEqual([])
  }, 120_000)
})
