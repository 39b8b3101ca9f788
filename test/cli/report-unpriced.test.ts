import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { execCli } from '../support/cli'
import { ROOT } from '../e2e/browser'
import { fixture } from '../support/fixtures'
import { postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'

/**
 * A call of a model with no known price is recorded at $0, unpriced (the dashboard marks it
 * *unpriced*). `burnrate report` printed its row, and its day, agent or session, as `$0.00`
 * with nothing to say that the amount is not what the call cost: a model the price data lacks
 * (a new release, a fine-tune) read as free. The table now names the models whose calls in the
 * window have no price, through a server and from the file alike. Each row's cost, and the total,
 * carries the count of its unpriced calls as `burnrate status` and the dashboard mark them
 * ('$0.00 2 unpriced', '$0.0001 + 2 unpriced'), a lower bound: without it a row of only unpriced
 * calls read as $0 of spend. JSON has each row's and the totals' `unpriced_requests`, CSV a last
 * column of it.
 */
const CLI = join(ROOT, 'out/main/cli.js')
let upstream: MockUpstream
let t: TestServer

beforeAll(async () => {
  // The upstream answers with the model it was asked for, as a real one does.
  upstream = await startMockUpstream((req) => {
    const answer = JSON.parse(fixture('openai-chat/chat-nonstream-cached.json').toString())
    answer.model = JSON.parse(req.body.toString()).model
    return { status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(answer) }
  })
  t = await startTestServer({ timezone: 'UTC' }, upstream.url)
  for (const model of ['gpt-4o-mini', 'ft-inhouse-coder-7', 'ft-inhouse-coder-7']) {
    const r = await postJson(`${t.url}/v1/chat/completions`, { model, messages: [{ role: 'user', content: 'hi' }] }, { authorization: 'Bearer sk-test-unpriced-0001', 'x-burnrate-agent': 'aider' })
    expect(r.status, r.text).toBe(200)
  }
  await t.server.ledger.flushed()
})
afterAll(async () => {
  await t?.cleanup()
  await upstream?.close()
})

function cli(args: string[]): ReturnType<typeof execCli> {
  return execCli(CLI, [...args, '--config', t.configFile, '--data-dir', t.dir], { env: { ...process.env, NO_COLOR: '1', HOME: t.home } })
}

describe('burnrate report with calls of a model that has no price', () => {
  for (const where of [['--url'], ['--local', '--no-import']]) {
    const from = where[0] === '--url' ? 'through the server' : 'from the ledger file'
    it.each(['model', 'daily', 'agent'])(`%s: says the model's calls have no price and count as nothing (${from})`, async (kind) => {
      const r = await cli(['report', kind, ...(where[0] === '--url' ? ['--url', t.url] : where)])
      expect(r.code, r.stderr).toBe(0)
      if (kind === 'model') {
        expect(r.stdout).toMatch(/│ ft-inhouse-coder-7 +│ +2 │.*│ +\$0\.00 2 unpriced │\n/)
        expect(r.stdout).toMatch(/│ gpt-4o-mini +│ +1 │.*│ +\$[0-9.]+ │\n/)
      }
      // The day and the agent hold the priced call and both unpriced ones.
      if (kind === 'daily') expect(r.stdout).toMatch(/│ \d{4}-\d{2}-\d{2} +│ +3 │.*│ +\$[0-9.]+ \+ 2 unpriced │\n/)
      if (kind === 'agent') expect(r.stdout).toMatch(/│ aider +│ +3 │.*│ +\$[0-9.]+ \+ 2 unpriced │\n/)
      expect(r.stdout).toMatch(/│ Total +│ +3 │.*│ +\$[0-9.]+ \+ 2 unpriced │\n/)
      expect(r.stdout).toContain('Calls of this model have no known price and count as $0 here:\n  ft-inhouse-coder-7 (openai)\n')
      expect(r.stdout).toContain('Costs marked unpriced count calls of no known price as $0: lower bounds.\n')
    })

    it(`--json and --csv carry each row's count (${from})`, async () => {
      const args = where[0] === '--url' ? ['--url', t.url] : where
      const j = await cli(['report', 'model', '--json', ...args])
      expect(j.code, j.stderr).toBe(0)
      const report = JSON.parse(j.stdout)
      expect(Object.fromEntries(report.rows.map((x: any) => [x.key, x.unpriced_requests]))).toEqual({ 'ft-inhouse-coder-7': 2, 'gpt-4o-mini': 0 })
      expect(report.totals.unpriced_requests).toBe(2)
      const c = await cli(['report', 'agent', '--csv', ...args])
      expect(c.code, c.stderr).toBe(0)
      const [head, aider] = c.stdout.trim().split(/\r?\n/)
      expect(head.split(',').at(-1)).toBe('unpriced_requests')
      expect(aider.split(',')[0]).toBe('aider')
      expect(aider.split(',').at(-1)).toBe('2')
    })

    it(`a window without them says nothing of them (${from})`, async () => {
      const r = await cli(['report', 'model', '--until', '2020-01-01', ...(where[0] === '--url' ? ['--url', t.url] : where)])
      expect(r.code, r.stderr).toBe(0)
      expect(r.stdout).not.toContain('no known price')
      expect(r.stdout).not.toContain('unpriced')
    })
  }

  it('--json and --csv name no model', async () => {
    const j = await cli(['report', 'model', '--json', '--url', t.url])
    expect(j.stdout).not.toContain('no known price')
    expect(JSON.parse(j.stdout).rows.map((r: { key: string }) => r.key).sort()).toEqual(['ft-inhouse-coder-7', 'gpt-4o-mini'])
    const c = await cli(['report', 'model', '--csv', '--url', t.url])
    expect(c.stdout).not.toContain('no known price')
  })
})
