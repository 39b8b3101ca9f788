import { describe, expect, it } from 'vitest'
import { createLogger } from '../../src/main/log'
import { spillFiles } from '../../src/main/reliability/spill'
import { lockFromAnotherProcess } from '../load/harness'
import { backgroundResponder, type Answers } from '../providers/background-support'
import { eventually, postJson, request } from '../support/http'
import { localRows, until, usePostgres } from '../support/pg-harness'

// A PostgreSQL instance stopped while its own SQLite file was busy keeps the budget holds and key
// patterns it could not write there in a spill file of the data folder (budgets/unwritten-rows.ts),
// for the next start to write to that file. A start that found the file still busy left them in
// the spill file "for the next start", but its PostgreSQL ledger then wrote the file's calls (none)
// and removed it: the rows were gone, and after the next restart the running job's reservation no
// longer held, so a second job passed the block rule.

const answers: Answers = new Map()
const h = usePostgres({ upstream: backgroundResponder(answers) })

const CONFIG = {
  timezone: 'UTC',
  // $6: one job's worst case (125,000 output tokens of o3-deep-research, about $5) fits; a second's does not while the first runs.
  budgets: { rules: [{ api_key_pattern: 'sk-startbusy-*', daily_limit_usd: 6, action: 'block', reserve: 'max_tokens' }] },
}
const KEY = 'sk-startbusy-aaaaaaaaaaaa-0001'

const start = (url: string, id: string) =>
  postJson(
    `${url}/v1/responses`,
    { model: 'o3-deep-research', input: 'Research otters in space.', background: true, max_output_tokens: 125_000, metadata: { id } },
    { authorization: `Bearer ${KEY}` },
  )

describe('a PostgreSQL start while its own SQLite file is busy', () => {
  it('keeps the spill file of holds and key patterns until the file takes them: the job still holds its reservation after the next start', async () => {
    const url = h.database()
    const first = await h.server({ url, config: CONFIG })
    const exclusive = await lockFromAnotherProcess(first.dbFile)
    try {
      expect((await start(first.url, 'resp_startbusy_a')).status).toBe(200)
      await first.stop()
    } finally {
      await exclusive.release()
    }
    expect(spillFiles(first.dir)).toHaveLength(1)

    // Another process writing the file (`burnrate import`): reads go on, writes wait.
    const writer = await lockFromAnotherProcess(first.dbFile, 'IMMEDIATE')
    let held = true
    try {
      const lines: string[] = []
      const busy = await h.server({ url, dir: first.dir, config: CONFIG, log: createLogger('info', (l) => lines.push(l)), create: { startupBusyMs: 200 } })
      expect(lines.some((l) => l.includes('cannot be written to') && l.includes('they stay in it for the next start'))).toBe(true)
      // The PostgreSQL ledger has written the spill files it found.
      await eventually(async () => (await request(`${busy.url}/api/health`)).json().storage.ready === true)
      // The file stays, and /api/health counts it while it does (builds before this one said
      // spill_files 0 once start-up had written what PostgreSQL takes, with the file still there).
      expect(spillFiles(first.dir)).toHaveLength(1)
      expect((await request(`${busy.url}/api/health`)).json().storage.spill_files).toBe(1)
      await busy.stop()
      expect(spillFiles(first.dir)).toHaveLength(1)
      await writer.release()
      held = false
    } finally {
      if (held) await writer.release()
    }

    const t = await h.server({ url, dir: first.dir, config: CONFIG })
    await until('the kept rows written and their file removed', async () => spillFiles(first.dir).length === 0)
    expect(localRows(t.dbFile, 'SELECT response_id FROM background_holds').map((r) => r.response_id)).toEqual(['resp_startbusy_a'])
    const refused = await start(t.url, 'resp_startbusy_b')
    expect(refused.status).toBe(429)
    expect(refused.json().error).toMatchObject({ type: 'budget_exceeded' })
  }, 120_000)
})
