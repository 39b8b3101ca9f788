import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { ROOT } from '../e2e/browser'
import { execCli } from '../support/cli'
import { postJson } from '../support/http'
import { modelEchoUpstream } from '../support/model-echo'
import { usePostgres } from '../support/pg-harness'

/**
 * As ../cli/report-unpriced.test.ts, through a server on PostgreSQL (its report summed from the
 * calls there): each row's and the totals' cost carries its count of calls of no known price.
 * The built CLI.
 */
const CLI = join(ROOT, 'out/main/cli.js')
const h = usePostgres({ upstream: modelEchoUpstream('chatcmpl-report-unpriced') })

describe('burnrate report with calls of a model that has no price, through a server on PostgreSQL', () => {
  it("counts each row's and marks its cost", async () => {
    const t = await h.server({ config: { timezone: 'UTC' } })
    for (const [model, session] of [['gpt-4o-mini', 's-1'], ['ft-inhouse-coder-7', 's-1'], ['ft-inhouse-coder-7', 's-2']]) {
      const r = await postJson(`${t.url}/v1/chat/completions`, { model, messages: [{ role: 'user', content: 'hi' }] }, {
        authorization: 'Bearer sk-test-unpriced-pg-0001', 'x-burnrate-agent': 'aider', 'x-burnrate-session': session,
      })
      expect(r.status, r.text).toBe(200)
    }
    expect(await t.server.ledger.flushed()).toBe(true)
    const cli = (...args: string[]) => execCli(CLI, ['report', ...args, '--url', t.url, '--config', t.configFile, '--data-dir', t.dir], { env: { ...process.env, NO_COLOR: '1', HOME: t.home } })
    const counts = async (kind: string) => {
      const r = await cli(kind, '--json')
      expect(r.code, r.stderr).toBe(0)
      const report = JSON.parse(r.stdout)
      return { rows: Object.fromEntries(report.rows.map((x: any) => [x.key, x.unpriced_requests])), total: report.totals.unpriced_requests }
    }
    expect(await counts('model')).toEqual({ rows: { 'ft-inhouse-coder-7': 2, 'gpt-4o-mini': 0 }, total: 2 })
    expect(await counts('session')).toEqual({ rows: { 's-1': 1, 's-2': 1 }, total: 2 })
    expect(await counts('agent')).toEqual({ rows: { aider: 2 }, total: 2 })
    expect(Object.values((await counts('daily')).rows)).toEqual([2])
    const table = await cli('session')
    expect(table.code, table.stderr).toBe(0)
    expect(table.stdout).toMatch(/│ s-1 +│ +2 │.*│ +\$[0-9.]+ \+ 1 unpriced │\n/)
    expect(table.stdout).toMatch(/│ s-2 +│ +1 │.*│ +\$0\.00 1 unpriced │\n/)
    expect(table.stdout).toContain('Costs marked unpriced count calls of no known price as $0: lower bounds.\n')
  }, 60_000)
})
