import { cpSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runCli } from '../../src/main/cli/program'
import { fixture } from '../support/fixtures'
import { postJson } from '../support/http'
import { freePort, localValue, usePostgres } from '../support/pg-harness'

/**
 * The CLI with no server running, on a config whose ledger is PostgreSQL (`BURNRATE_DATABASE_URL`):
 * status, report and export read the calls in PostgreSQL (not the data folder's empty file), and
 * import writes there.
 */

const h = usePostgres({
  upstream: () => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('openai-chat/chat-nonstream-cached.json') }),
})
let home: string
let url: string
const saved = { ...process.env }
let out = ''

async function cli(...args: string[]): Promise<number> {
  out = ''
  const stdout = process.stdout.write
  const stderr = process.stderr.write
  process.stdout.write = ((s: string) => ((out += s), true)) as typeof process.stdout.write
  process.stderr.write = (() => true) as typeof process.stderr.write
  try {
    return await runCli(args)
  } finally {
    process.stdout.write = stdout
    process.stderr.write = stderr
  }
}

beforeAll(async () => {
  url = h.database()
  home = h.tempDir('burnrate-pg-cli-')
  cpSync(resolve(__dirname, '../fixtures/agent-logs/codex'), join(home, '.codex'), { recursive: true })
  // One proxied call recorded by a server on the database, then the server is gone.
  const t = await h.server({ url })
  expect((await postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [] }, { authorization: 'Bearer sk-cli-pg-000000000001' })).status).toBe(200)
  await t.cleanup()
  process.env.HOME = home
  process.env.BURNRATE_DATA_DIR = join(home, 'data')
  process.env.BURNRATE_PORT = String(await freePort())
  process.env.BURNRATE_DATABASE_URL = url
  for (const v of ['CLAUDE_CONFIG_DIR', 'CODEX_HOME', 'GEMINI_CLI_HOME', 'XDG_DATA_HOME', 'BURNRATE_CONFIG']) delete process.env[v]
})
afterAll(async () => {
  for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k]
  Object.assign(process.env, saved)
})

describe('the CLI on a PostgreSQL ledger, no server running', () => {
  it('imports into PostgreSQL, and status, report and export read PostgreSQL', async () => {
    // status first reads the agents' standard log folders (Codex's here) into the ledger: PostgreSQL.
    expect(await cli('status', '--json')).toBe(0)
    const status = JSON.parse(out)
    expect(status.ledger.calls).toBe(3)
    expect(status.source).toMatch(/^PostgreSQL at postgres:\/\/burnrate@127\.0\.0\.1:\d+\//)
    // Importing the same logs again adds nothing (this machine's file remembers them).
    expect(await cli('import', 'codex', '--path', join(home, '.codex/sessions'), '--json')).toBe(0)
    expect(JSON.parse(out).results[0]).toMatchObject({ imported: 0, unchanged: 1 })

    expect(await cli('report', 'agent', '--json', '--no-import')).toBe(0)
    expect(JSON.parse(out).totals).toMatchObject({ requests: 3, imported: 2 })

    expect(await cli('export', '--format', 'json')).toBe(0)
    const calls = JSON.parse(out).calls as { source: string }[]
    expect(calls.map((c) => c.source).sort()).toEqual(['import', 'import', 'proxy'])

    // The data folder's own file holds the import keys, and no calls.
    expect(localValue(join(home, 'data', 'burnrate.db'), 'SELECT count(*) FROM calls')).toBe(0)
    expect(localValue(join(home, 'data', 'burnrate.db'), 'SELECT count(*) FROM import_keys')).toBe(2)
  })
})
