import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { importLogs } from '../../src/main/import/importer'
import { Pricer } from '../../src/main/pricing/price'
import { fixture } from '../support/fixtures'
import { postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'

/**
 * A Codex session forked (`/fork`) has its parent's items copied into the fork's rollout, token
 * counts included, each stamped when the copy was written (the fork's start), not when the call
 * was made. The copies are the parent's calls, keyed as the parent's rollout keys them, so
 * whichever rollout is read first stores them. Read from `sessions/` then `archived_sessions/`,
 * a fork whose parent was archived (Codex archives a conversation to archived_sessions/) was
 * read first: the parent's calls were stored at the fork's time (on the fork's day in `report
 * daily`), where the proxy's record of them, made when they were, is not looked for, so a call
 * that went through Burnrate was counted twice, the proxy's and the import's. The rollouts are
 * now read oldest first, whatever folder they are in (Codex names each by its start time), so
 * the parent's own lines give its calls their time and proxied twin.
 */
const PARENT = '019a4b1c-2d3e-7f40-8a51-6b7c8d9e0f12'
const FORK = '019a4b9f-0a1b-7c2d-9e3f-4a5b6c7d8e90'
let upstream: MockUpstream
let t: TestServer
beforeAll(async () => {
  upstream = await startMockUpstream()
  t = await startTestServer({}, upstream.url)
})
afterAll(async () => {
  await t.cleanup()
  await upstream.close()
})

/** Codex's name of a rollout started at `ms`: `rollout-YYYY-MM-DDTHH-MM-SS-<id>.jsonl`. */
const rolloutName = (ms: number, id: string) => `rollout-${new Date(ms).toISOString().slice(0, 19).replace(/:/g, '-')}-${id}.jsonl`
const jsonl = (lines: object[]) => lines.map((l) => JSON.stringify(l)).join('\n') + '\n'
const at = (ms: number) => new Date(ms).toISOString()
const meta = (ms: number, id: string, extra: object = {}) => ({
  timestamp: at(ms), type: 'session_meta', payload: { id, session_id: id, timestamp: at(ms), cwd: '/home/dev/shop', originator: 'codex_cli_rs', cli_version: '0.171.0', model_provider: 'openai', ...extra },
})
const turn = (ms: number) => ({ timestamp: at(ms), type: 'turn_context', payload: { cwd: '/home/dev/shop', model: 'gpt-5-nano' } })
const tokens = (ms: number, total: [number, number], last: [number, number]) => ({
  timestamp: at(ms), type: 'event_msg',
  payload: { type: 'token_count', info: {
    total_token_usage: { input_tokens: total[0], cached_input_tokens: 0, output_tokens: total[1], reasoning_output_tokens: 0, total_tokens: total[0] + total[1] },
    last_token_usage: { input_tokens: last[0], cached_input_tokens: 0, output_tokens: last[1], reasoning_output_tokens: 0, total_tokens: last[0] + last[1] },
  } },
})

it("Codex: a fork whose parent was archived still leaves the parent's calls at their time, matched to the proxy's record", async () => {
  // The parent's one call went through Burnrate (the answer's usage: 11 in, 327 out).
  upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('openai-responses/responses-nonstream-reasoning.json') }))
  expect((await postJson(`${t.url}/v1/responses`, { model: 'gpt-5-nano', input: 'hi' }, { authorization: 'Bearer sk-test-0000000000001' })).status).toBe(200)
  t.server.ledger.flush()
  const db = t.server.db
  const proxied = db.prepare('SELECT id, ts FROM calls').get() as { id: number; ts: number }
  const start = proxied.ts - 5_000
  // Forked two hours later: the copies are stamped then, and the fork's own call (a direct one, 500 in, 50 out) follows.
  const forked = proxied.ts + 2 * 3_600_000
  const codex = join(t.dir, 'codex')
  const day = new Date(start).toISOString().slice(0, 10).replace(/-/g, '/')
  mkdirSync(join(codex, 'archived_sessions', day), { recursive: true })
  mkdirSync(join(codex, 'sessions', day), { recursive: true })
  writeFileSync(join(codex, 'archived_sessions', day, rolloutName(start, PARENT)), jsonl([meta(start, PARENT), turn(start + 10), tokens(proxied.ts + 2_000, [11, 327], [11, 327])]))
  writeFileSync(
    join(codex, 'sessions', day, rolloutName(forked, FORK)),
    jsonl([
      meta(forked, FORK, { forked_from_id: PARENT }),
      meta(forked + 10, PARENT),
      turn(forked + 11),
      tokens(forked + 12, [11, 327], [11, 327]),
      turn(forked + 15_000),
      tokens(forked + 30_000, [511, 377], [500, 50]),
    ]),
  )

  const s = await importLogs(db, { agent: 'codex', paths: [join(codex, 'sessions'), join(codex, 'archived_sessions')], pricer: new Pricer(), now: forked + 3_600_000 })
  expect(s).toMatchObject({ files: 2, matched: 1, imported: 1, duplicates: 1 })
  // The proxy's call, and the fork's own: the parent's answer is counted once, at its time.
  expect(db.prepare('SELECT source, session, ts, input_tokens, output_tokens FROM calls ORDER BY ts').all()).toEqual([
    { source: 'proxy', session: expect.any(String), ts: proxied.ts, input_tokens: 11, output_tokens: 327 },
    { source: 'import', session: FORK, ts: forked + 30_000, input_tokens: 500, output_tokens: 50 },
  ])
})
