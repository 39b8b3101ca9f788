import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { claudeCode } from '../../src/main/import/sources/claude-code'

/**
 * Claude Code logged in with a Claude account (Pro, Max, Team) sends its calls with an OAuth
 * token and the `oauth-2025-04-20` beta flag, which it logs with each request (`api-request`,
 * `params.betas`; the answer names it by `requestRef`): those calls are plan usage, never API
 * money. The real Claude Code's own logs of both logins are imported in the real-agents suite.
 */
const BETAS = ['claude-code-20250219', 'interleaved-thinking-2025-05-14']
const request = (id: string, oauth: boolean) => ({ type: 'api-request', id, sessionId: 's1', params: { betas: oauth ? [...BETAS, 'oauth-2025-04-20'] : BETAS, model: 'claude-sonnet-4-5' } })
const answer = (msg: string, requestRef?: string) => ({
  type: 'assistant', sessionId: 's1', cwd: '/home/dev/x', timestamp: '2026-11-20T10:00:00.000Z', ...(requestRef ? { requestRef } : {}),
  message: { id: msg, model: 'claude-sonnet-4-5', usage: { input_tokens: 100, output_tokens: 10 } },
})
const dir = mkdtempSync(join(tmpdir(), 'burnrate-claude-plan-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let files = 0
/** Each answer's billing, read from a transcript of `lines` as the importer reads one. */
async function billings(lines: object[]): Promise<string[][]> {
  const file = join(dir, `t${files++}.jsonl`)
  writeFileSync(file, lines.map((l) => JSON.stringify(l)).join('\n'))
  return (await claudeCode.read(file, dir)).calls.map((c) => [c.response_id!, c.billing ?? 'api'])
}

describe('Claude Code logs: a Claude account login is plan usage', () => {
  it('each answer takes the login of the request it names', async () => {
    expect(await billings([request('r1', true), answer('m1', 'r1'), request('r2', false), answer('m2', 'r2')])).toEqual([['m1', 'subscription'], ['m2', 'api']])
  })

  it("an answer whose request is not in its file takes the file's one login; with two logins in the file, money", async () => {
    expect(await billings([request('r1', true), answer('m1', 'r1'), answer('m2', 'r-elsewhere'), answer('m3')])).toEqual([['m1', 'subscription'], ['m2', 'subscription'], ['m3', 'subscription']])
    expect(await billings([request('r1', true), request('r2', false), answer('m1', 'r-elsewhere')])).toEqual([['m1', 'api']])
  })

  it('an answer whose request a fetch hook changed names it by requestHookChanged.record, and takes its login', async () => {
    // Claude Code writes `requestHookChanged: {record, what}` in place of `requestRef` when a plugin's http.fetch hook changed the request it recorded.
    const hooked = { ...answer('m2'), requestHookChanged: { record: 'r2', what: ['body'] } }
    expect(await billings([request('r1', false), answer('m1', 'r1'), request('r2', true), hooked])).toEqual([['m1', 'api'], ['m2', 'subscription']])
  })

  it('an older log without its requests is money, as before', async () => {
    expect(await billings([answer('m1'), answer('m2', 'r1')])).toEqual([['m1', 'api'], ['m2', 'api']])
  })
})
