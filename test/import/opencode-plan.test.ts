import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { describe, expect, it } from 'vitest'
import { importLogs } from '../../src/main/import/importer'
import { openDatabase } from '../../src/main/ledger/db'
import { Pricer } from '../../src/main/pricing/price'

/**
 * opencode logged in to a plan prices every model of that provider at 0: its ChatGPT login
 * (the built-in Codex plugin, provider `openai`: "Zero out costs for Codex (included with ChatGPT
 * subscription)") and its Claude account login (the Anthropic OAuth plugin: "Zero out cost display
 * for Pro/Max subscription") set each model's `cost` to 0, so the message's `cost` is 0 while its
 * tokens are not. Those calls are plan usage, as the proxy records them (`billing:
 * "subscription"`, a ChatGPT login's under `chatgpt`), never API money.
 *
 * `cost: 0` alone does not say so: with an API key, a model models.dev has no price for (a new
 * one) is logged at 0 too, and that is money. opencode's `auth.json` (beside its logs) tells how
 * each provider is logged in: only an `oauth` login's 0 is a plan's.
 */
const T = Date.parse('2026-11-20T10:00:00.000Z')
const message = (id: string, providerID: string, modelID: string, cost: number | undefined) => ({
  id, role: 'assistant', sessionID: 'ses_1', providerID, modelID, path: { cwd: '/home/dev/x' }, time: { created: T + Number(id.slice(-1)) * 1000 },
  tokens: { input: 1200, output: 300, reasoning: 0, cache: { read: 5000, write: 0 } }, ...(cost === undefined ? {} : { cost }),
})
const MESSAGES = [
  message('msg_1', 'openai', 'gpt-5-codex', 0),
  message('msg_2', 'anthropic', 'claude-sonnet-4-5-20250929', 0),
  message('msg_3', 'anthropic', 'claude-sonnet-4-5-20250929', 0.0213),
  message('msg_4', 'openai', 'gpt-5-codex', 0.0109),
]
const ACCESS = 'eyJ-access-token-never-copied'
const REFRESH = 'rt-refresh-token-never-copied'
const KEY = 'sk-ant-api-key-never-copied'
const oauth = { type: 'oauth', access: ACCESS, refresh: REFRESH, expires: T + 3_600_000 }

/**
 * Imports MESSAGES from an opencode folder whose auth.json holds `auth` (none when null), as
 * message files or (newer opencode) rows of opencode.db: each call's provider, billing and cost.
 */
async function imported(auth: string | null, store: 'files' | 'db' = 'files'): Promise<{ rows: any[]; ledger: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'burnrate-opencode-plan-'))
  const root = join(dir, 'opencode')
  const folder = join(root, 'storage/message/ses_1')
  mkdirSync(folder, { recursive: true })
  if (auth !== null) writeFileSync(join(root, 'auth.json'), auth)
  if (store === 'files') for (const m of MESSAGES) writeFileSync(join(folder, `${m.id}.json`), JSON.stringify(m))
  else {
    const oc = new Database(join(root, 'opencode.db'))
    oc.exec('CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, data TEXT NOT NULL)')
    for (const { id, sessionID, ...m } of MESSAGES) oc.prepare('INSERT INTO message VALUES (?, ?, ?)').run(id, sessionID, JSON.stringify(m))
    oc.close()
  }
  const file = join(dir, 'burnrate.db')
  const db = openDatabase(file)
  try {
    const stats = await importLogs(db, { agent: 'opencode', paths: [root], pricer: new Pricer(), now: T + 3_600_000 })
    expect(stats.imported).toBe(MESSAGES.length)
    const rows = db.prepare('SELECT provider, billing, cost_usd FROM calls ORDER BY ts').all() as any[]
    db.close()
    const ledger = [file, `${file}-wal`].filter(existsSync).map((f) => readFileSync(f, 'latin1')).join('')
    return { rows, ledger }
  } finally {
    if (db.open) db.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

const API = [
  ['openai', 'api'],
  ['anthropic', 'api'],
  ['anthropic', 'api'],
  ['openai', 'api'],
]

describe("opencode's calls priced at 0", () => {
  it.each(['files', 'db'] as const)('under a plan login (auth.json: oauth) are plan usage; priced ones stay money (%s)', async (store) => {
    const { rows, ledger } = await imported(JSON.stringify({ openai: { ...oauth, accountId: 'acc_1' }, anthropic: oauth }), store)
    expect(rows.map((r) => [r.provider, r.billing])).toEqual([
      ['chatgpt', 'subscription'],
      ['anthropic', 'subscription'],
      ['anthropic', 'api'],
      ['openai', 'api'],
    ])
    // Plan usage keeps its API-equivalent value, as the proxy records it.
    expect(rows.every((r) => r.cost_usd > 0)).toBe(true)
    // Only the login's type is read: its tokens are nowhere in the ledger.
    for (const secret of [ACCESS, REFRESH]) expect(ledger).not.toContain(secret)
  })

  it.each(['files', 'db'] as const)('under an API key (auth.json: api) are API money: a model opencode has no price for (%s)', async (store) => {
    const { rows, ledger } = await imported(JSON.stringify({ openai: { type: 'api', key: KEY }, anthropic: { type: 'api', key: KEY } }), store)
    expect(rows.map((r) => [r.provider, r.billing])).toEqual(API)
    expect(rows.every((r) => r.cost_usd > 0)).toBe(true)
    expect(ledger).not.toContain(KEY)
  })

  it('are each provider’s own login: an oauth openai and an api anthropic', async () => {
    const { rows } = await imported(JSON.stringify({ openai: oauth, anthropic: { type: 'api', key: KEY } }))
    expect(rows.map((r) => [r.provider, r.billing])).toEqual([
      ['chatgpt', 'subscription'],
      ['anthropic', 'api'],
      ['anthropic', 'api'],
      ['openai', 'api'],
    ])
  })

  it('with no auth.json, no entry for the provider, or one that cannot be read, are API money and the import goes on', async () => {
    for (const auth of [null, '{}', JSON.stringify({ openrouter: oauth }), '{"openai": {"type": "oauth", "access": "', 'null', '[1]', JSON.stringify({ openai: 'oauth', anthropic: { type: 'wellknown', key: 'k', token: 't' } })]) {
      const { rows } = await imported(auth)
      expect(rows.map((r) => [r.provider, r.billing]), String(auth)).toEqual(API)
    }
  })
})
