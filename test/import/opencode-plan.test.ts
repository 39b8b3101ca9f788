import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect, it } from 'vitest'
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
 */
const T = Date.parse('2026-11-20T10:00:00.000Z')
const message = (id: string, providerID: string, modelID: string, cost: number | undefined) => ({
  id, role: 'assistant', sessionID: 'ses_1', providerID, modelID, path: { cwd: '/home/dev/x' }, time: { created: T + Number(id.slice(-1)) * 1000 },
  tokens: { input: 1200, output: 300, reasoning: 0, cache: { read: 5000, write: 0 } }, ...(cost === undefined ? {} : { cost }),
})

it('opencode calls it priced at 0 under a plan login are plan usage; priced ones stay money', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'burnrate-opencode-plan-'))
  const root = join(dir, 'opencode')
  const folder = join(root, 'storage/message/ses_1')
  mkdirSync(folder, { recursive: true })
  const msgs = [
    message('msg_1', 'openai', 'gpt-5-codex', 0),
    message('msg_2', 'anthropic', 'claude-sonnet-4-5-20250929', 0),
    message('msg_3', 'anthropic', 'claude-sonnet-4-5-20250929', 0.0213),
    message('msg_4', 'openai', 'gpt-5-codex', 0.0109),
  ]
  for (const m of msgs) writeFileSync(join(folder, `${m.id}.json`), JSON.stringify(m))
  const db = openDatabase(join(dir, 'burnrate.db'))
  try {
    await importLogs(db, { agent: 'opencode', paths: [root], pricer: new Pricer(), now: T + 3_600_000 })
    const rows = db.prepare('SELECT provider, billing, cost_usd FROM calls ORDER BY ts').all() as any[]
    expect(rows.map((r) => [r.provider, r.billing])).toEqual([
      ['chatgpt', 'subscription'],
      ['anthropic', 'subscription'],
      ['anthropic', 'api'],
      ['openai', 'api'],
    ])
    // Plan usage keeps its API-equivalent value, as the proxy records it.
    expect(rows.every((r) => r.cost_usd > 0)).toBe(true)
  } finally {
    db.close()
    rmSync(dir, { recursive: true, force: true })
  }
})
