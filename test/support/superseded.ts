import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, expect } from 'vitest'
import { LogWatcher } from '../../src/main/import/watcher'
import { silentLogger } from '../../src/main/log'
import { Pricer } from '../../src/main/pricing/price'
import { fixture } from './fixtures'
import { eventually, postJson } from './http'
import { type MockUpstream, startMockUpstream } from './mock-upstream'
import type { TestServer } from './server'

/**
 * The set-up of the tests of an imported call the proxy's record supersedes (test/import/superseded-*):
 * a mock upstream answering every call with one recorded Anthropic answer, Claude Code homes in temp
 * dirs whose transcripts hold that answer's lines, a log watcher importing them into a test server,
 * and the proxied call of the same answer that supersedes the imported one.
 */

/** The recorded answer the mock upstream gives every proxied call. */
export const ANSWER = 'anthropic/messages-nonstream-basic.json'
/** Its body, whose lines the transcripts hold (its id is the proxied call's response id). */
export const BODY = JSON.parse(fixture(ANSWER).toString())
/** The project folder of a home's transcripts (cwd /home/dev/shop). */
export const PROJECT_DIR = '.claude/projects/-home-dev-shop'

export interface SupersedeRig {
  /** The mock upstream (started before the file's tests). */
  readonly upstream: MockUpstream
  /** A new home with an empty project folder, removed after the file's tests. */
  home(): string
  /** Writes `text` as the transcript `name`.jsonl of `home`'s project; returns its path. */
  transcript(home: string, name: string, text: string): string
  /** A log watcher importing `home`'s logs into `t`'s ledger (run it with runOnce). */
  watcher(t: TestServer, home: string): LogWatcher
  /** Imports `home`'s logs into `t` once, expecting `imported` Claude Code calls, and flushes the ledger. */
  importLogs(t: TestServer, home: string, imported: number): Promise<void>
  /** Sends the answer through `t`'s proxy with `apiKey` and waits until the ledger has recorded it. */
  proxy(t: TestServer, apiKey: string): Promise<void>
  /** Waits until the imported call (of `responseId` when given) names its superseding call, and flushes the ledger. */
  untilSuperseded(t: TestServer, responseId?: string): Promise<void>
}

/** Registers the file's mock upstream and temp homes (`prefix` names the homes' temp dirs). */
export function supersedeRig(prefix: string): SupersedeRig {
  let upstream: MockUpstream | undefined
  const homes: string[] = []
  beforeAll(async () => {
    upstream = await startMockUpstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture(ANSWER) }))
  })
  afterAll(async () => {
    await upstream?.close()
    for (const home of homes.splice(0)) rmSync(home, { recursive: true, force: true })
  })
  const rig: SupersedeRig = {
    get upstream() {
      if (!upstream) throw new Error('the mock upstream is not started yet: read it inside a test')
      return upstream
    },
    home() {
      const home = mkdtempSync(join(tmpdir(), `${prefix}-`))
      homes.push(home)
      mkdirSync(join(home, PROJECT_DIR), { recursive: true })
      return home
    },
    transcript(home, name, text) {
      const file = join(home, PROJECT_DIR, `${name}.jsonl`)
      writeFileSync(file, text)
      return file
    },
    watcher(t, home) {
      const { db, ledger } = t.server
      return new LogWatcher({ db, ledger, pricer: new Pricer(), log: silentLogger, env: {}, home, budgets: () => t.server.context.budgets, settleMs: 0 })
    },
    async importLogs(t, home, imported) {
      const w = rig.watcher(t, home)
      expect((await w.runOnce()).find((x) => x.agent === 'claude-code')).toMatchObject({ imported })
      await w.stop()
      t.server.ledger.flush()
    },
    async proxy(t, apiKey) {
      expect((await postJson(`${t.url}/anthropic/v1/messages`, { model: 'claude-sonnet-4-5', messages: [] }, { 'x-api-key': apiKey })).status).toBe(200)
      expect(await t.server.ledger.flushed()).toBe(true)
    },
    async untilSuperseded(t, responseId) {
      const { db, ledger } = t.server
      const read = responseId === undefined
        ? () => db.prepare("SELECT superseded_by FROM calls WHERE source = 'import'").pluck().get()
        : () => db.prepare("SELECT superseded_by FROM calls WHERE source = 'import' AND response_id = ?").pluck().get(responseId)
      await eventually(() => read() !== null, 10_000)
      ledger.flush()
    },
  }
  return rig
}
