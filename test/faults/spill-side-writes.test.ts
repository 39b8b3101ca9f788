import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLogger } from '../../src/main/log'
import { spillFiles } from '../../src/main/reliability/spill'
import { lockFromAnotherProcess } from '../load/harness'
import { backgroundResponder, type Answers } from '../providers/background-support'
import { postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { startTestServer } from '../support/server'

// A background response's held reservation (and a key's rule patterns) are written with the
// ledger's next batch of calls. Stopped while the database could not be written, the calls went
// to a spill file and the hold was dropped: after the restart a second job, whose worst case does
// not fit beside the first one's, was let past the block rule.

const answers: Answers = new Map()
let upstream: MockUpstream

beforeAll(async () => {
  upstream = await startMockUpstream(backgroundResponder(answers))
})
afterAll(async () => {
  await upstream.close()
})

const CONFIG = {
  timezone: 'UTC',
  // $6: one job's worst case (125,000 output tokens of o3-deep-research, about $5) fits; a second's does not while the first runs.
  budgets: { rules: [{ api_key_pattern: 'sk-bgspill-*', daily_limit_usd: 6, action: 'block', reserve: 'max_tokens' }] },
}
const KEY = 'sk-bgspill-SPILLHOLDSECRET-0001'

const start = (url: string, id: string) =>
  postJson(
    `${url}/v1/responses`,
    { model: 'o3-deep-research', input: 'Research otters in space.', background: true, max_output_tokens: 125_000, metadata: { id } },
    { authorization: `Bearer ${KEY}` },
  )

describe('a stop while the database is locked, with a background job running', () => {
  it('keeps its held reservation with the calls in the spill file: after the restart a second job is still refused', async () => {
    const lines: string[] = []
    const t = await startTestServer(CONFIG, upstream.url, undefined, { log: createLogger('info', (l) => lines.push(l)) })
    const lock = await lockFromAnotherProcess(t.dbFile)
    try {
      expect((await start(t.url, 'resp_spill_hold_a')).status).toBe(200)
      // Before the stop too: the hold is in force.
      expect((await start(t.url, 'resp_spill_hold_b')).status).toBe(429)
      await t.stop()
      const files = spillFiles(t.dir)
      expect(files).toHaveLength(1)
      const text = readFileSync(files[0], 'utf8')
      expect(text).toContain('resp_spill_hold_a')
      expect(text).not.toContain('SPILLHOLDSECRET')
      expect(lines.join('')).toMatch(/; 2 call\(s\) and 2 other row\(s\) \(budget holds, key patterns\) kept in/)
    } finally {
      await lock.release()
    }
    const again = await t.restart()
    try {
      expect(spillFiles(t.dir)).toEqual([])
      const refused = await start(again.url, 'resp_spill_hold_c')
      expect(refused.status).toBe(429)
      expect(refused.json().error).toMatchObject({ type: 'budget_exceeded' })
      expect(refused.json().error.message).toMatch(/could cost up to/)
    } finally {
      await again.cleanup()
    }
  })
})
