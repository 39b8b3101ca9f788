import { appendFileSync, cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { expect, it } from 'vitest'
import { importLogs } from '../../src/main/import/importer'
import { openDatabase } from '../../src/main/ledger/db'
import { Pricer } from '../../src/main/pricing/price'

/**
 * A Codex fork's running total goes on from its copy of its parent's (test/fixtures/codex-fork):
 * the parent going on past the fork can reach a total the fork reached, another call. A fork's own
 * calls are keyed by its own thread; its copies as the thread that logged them.
 */
const PARENT = '019a4b1c-2d3e-7f40-8a51-6b7c8d9e0f12'
const FORK = '019a4b9f-0a1b-7c2d-9e3f-4a5b6c7d8e90'
const FORK2 = '019a4bb0-1c2d-7e3f-8a4b-5c6d7e8f9a01'
const DAY = 'sessions/2026/11/02'
const PARENT_FILE = `rollout-2026-11-02T09-14-03-${PARENT}.jsonl`
const FORK_FILE = `rollout-2026-11-02T10-02-47-${FORK}.jsonl`
const now = Date.parse('2026-11-03T00:00:00Z')

const jsonl = (lines: object[]) => lines.map((l) => JSON.stringify(l) + '\n').join('')
const tokenCount = (ts: string, total: [number, number, number], last: [number, number, number]) => ({
  timestamp: ts, type: 'event_msg',
  payload: {
    type: 'token_count',
    info: {
      total_token_usage: { input_tokens: total[0], cached_input_tokens: total[1], output_tokens: total[2], reasoning_output_tokens: 0, total_tokens: total[0] + total[2] },
      last_token_usage: { input_tokens: last[0], cached_input_tokens: last[1], output_tokens: last[2], reasoning_output_tokens: 0, total_tokens: last[0] + last[2] },
      model_context_window: 272000,
    },
    rate_limits: null,
  },
})
// The parent, after the fork was made, is sent the same follow-up: same context, same prompt, an answer as long (total 29855, the fork's own call's).
const parentGoesOn = () => jsonl([
  { timestamp: '2026-11-02T10:05:00.000Z', type: 'response_item', payload: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'fix only the checkout one' }] } },
  tokenCount('2026-11-02T10:05:11.000Z', [28950, 18176, 905], [10490, 9472, 315]),
])

async function withLogs(run: (dir: string, db: ReturnType<typeof openDatabase>) => Promise<void>) {
  const dir = mkdtempSync(join(tmpdir(), 'burnrate-codex-fork-collide-'))
  const db = openDatabase(join(dir, 'burnrate.db'))
  try {
    cpSync(resolve(__dirname, '../fixtures/codex-fork/sessions'), join(dir, 'sessions'), { recursive: true })
    await run(dir, db)
  } finally {
    db.close()
    rmSync(dir, { recursive: true, force: true })
  }
}
const read = (dir: string, db: ReturnType<typeof openDatabase>) => importLogs(db, { agent: 'codex', paths: [join(dir, 'sessions')], pricer: new Pricer(), now })

it("a parent going on past its fork with the fork's running total keeps both calls", async () => {
  await withLogs(async (dir, db) => {
    appendFileSync(join(dir, DAY, PARENT_FILE), parentGoesOn())
    expect(await read(dir, db)).toMatchObject({ files: 2, imported: 4, duplicates: 2 })
    expect(db.prepare('SELECT session, input_tokens FROM calls ORDER BY ts').all()).toEqual([
      { session: PARENT, input_tokens: 8810 },
      { session: PARENT, input_tokens: 9650 },
      { session: FORK, input_tokens: 10490 },
      { session: PARENT, input_tokens: 10490 },
    ])
  })
})

for (const storedIn of [FORK, PARENT]) {
  it(`a fork's own calls an earlier build keyed as its parent's (in the ${storedIn === FORK ? "fork's" : "parent's"} session) are not counted again when the fork grows`, async () => {
    await withLogs(async (dir, db) => {
      expect(await read(dir, db)).toMatchObject({ imported: 3 })
      // As an earlier build kept it: the fork's own call under the root thread's key (before c112af88, in the parent's session).
      expect(db.prepare('UPDATE import_keys SET key = ? WHERE key = ?').run(`codex:${PARENT}:29855`, `codex:${FORK}:29855`).changes).toBe(1)
      db.prepare('UPDATE calls SET session = ? WHERE session = ?').run(storedIn, FORK)
      appendFileSync(join(dir, DAY, FORK_FILE), jsonl([tokenCount('2026-11-02T10:04:00.000Z', [40000, 27000, 1200], [11050, 8824, 295])]))
      expect(await read(dir, db)).toMatchObject({ imported: 1 })
      expect(db.prepare('SELECT session, input_tokens FROM calls ORDER BY ts').all()).toEqual([
        { session: PARENT, input_tokens: 8810 },
        { session: PARENT, input_tokens: 9650 },
        { session: storedIn, input_tokens: 10490 },
        { session: FORK, input_tokens: 11050 },
      ])
      expect(await read(dir, db)).toMatchObject({ imported: 0, unchanged: 2 })
    })
  })
}

for (const parentWentOn of [false, true]) {
  it(`a fork of a fork: its copies of the middle fork's own calls are those calls${parentWentOn ? ' (the root going on to the same total)' : ''}`, async () => {
    await withLogs(async (dir, db) => {
      if (parentWentOn) appendFileSync(join(dir, DAY, PARENT_FILE), parentGoesOn())
      // FORK2 forked from FORK at 10:20: its rollout opens with its own session_meta, then a copy of FORK's items, stamped as written.
      const copied = readFileSync(join(dir, DAY, FORK_FILE), 'utf8').trim().split('\n').map((l) => ({ ...JSON.parse(l), timestamp: '2026-11-02T10:20:00.010Z' }))
      const meta = { ...copied[0], timestamp: '2026-11-02T10:20:00.000Z' }
      meta.payload = { ...meta.payload, id: FORK2, session_id: FORK2, forked_from_id: FORK, timestamp: '2026-11-02T10:20:00.000Z' }
      writeFileSync(
        join(dir, DAY, `rollout-2026-11-02T10-20-00-${FORK2}.jsonl`),
        jsonl([meta, ...copied, tokenCount('2026-11-02T10:21:00.000Z', [40000, 27000, 1200], [11050, 8824, 295])]),
      )
      expect(await read(dir, db)).toMatchObject({ files: 3, imported: parentWentOn ? 5 : 4, duplicates: 5 })
      expect(db.prepare('SELECT session, input_tokens FROM calls ORDER BY ts').all()).toEqual([
        { session: PARENT, input_tokens: 8810 },
        { session: PARENT, input_tokens: 9650 },
        { session: FORK, input_tokens: 10490 },
        ...(parentWentOn ? [{ session: PARENT, input_tokens: 10490 }] : []),
        { session: FORK2, input_tokens: 11050 },
      ])
    })
  })
}

it("a sub-agent forked with its parent's history (its parent's session) keeps its own call at the parent's later running total", async () => {
  await withLogs(async (dir, db) => {
    const SUB = '019a4bc0-1c2d-7e3f-8a4b-5c6d7e8f9a02'
    // spawn_agent with the parent's history: the sub-agent's thread, the parent's session_id, then a copy of the parent's items.
    const copied = readFileSync(join(dir, DAY, PARENT_FILE), 'utf8').trim().split('\n').map((l) => ({ ...JSON.parse(l), timestamp: '2026-11-02T10:30:00.010Z' }))
    const meta = { ...copied[0], timestamp: '2026-11-02T10:30:00.000Z' }
    meta.payload = { ...meta.payload, id: SUB, session_id: PARENT, parent_thread_id: PARENT }
    writeFileSync(
      join(dir, DAY, `rollout-2026-11-02T10-30-00-${SUB}.jsonl`),
      jsonl([meta, ...copied, tokenCount('2026-11-02T10:31:00.000Z', [30000, 20000, 700], [11540, 11000, 110])]),
    )
    // The parent goes on to the same running total (30700) with a call of its own.
    appendFileSync(join(dir, DAY, PARENT_FILE), jsonl([tokenCount('2026-11-02T10:35:00.000Z', [30000, 20000, 700], [11000, 9000, 300])]))
    expect(await read(dir, db)).toMatchObject({ imported: 5 })
    expect(db.prepare('SELECT session, input_tokens, output_tokens FROM calls ORDER BY ts').all()).toEqual([
      { session: PARENT, input_tokens: 8810, output_tokens: 402 },
      { session: PARENT, input_tokens: 9650, output_tokens: 188 },
      { session: FORK, input_tokens: 10490, output_tokens: 315 },
      { session: PARENT, input_tokens: 11540, output_tokens: 110 },
      { session: PARENT, input_tokens: 11000, output_tokens: 300 },
    ])
    expect(await read(dir, db)).toMatchObject({ imported: 0, unchanged: 3 })
  })
})
