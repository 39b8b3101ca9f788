import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { calcPrice } from '@pydantic/genai-prices'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixture, fixtureJson } from '../support/fixtures'
import { postJson, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { listeningUrl } from '../support/child'

/**
 * What the build does to the main process's code so that V8 holds less of it (see
 * electron.vite.config.ts): every chunk is ASCII (V8 keeps a module's source for its lifetime,
 * at two bytes a character if one character needs it), and the price library's price table is a
 * JSON file read with JSON.parse, not an object literal in the code. The built server still
 * prices calls with it.
 */
const ROOT = resolve(__dirname, '../..')
const OUT = join(ROOT, 'out/main')
const CLI = join(OUT, 'cli.js')

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(join(dir, e.name)) : [join(dir, e.name)]))
}

let dir: string
const children = new Set<ChildProcess>()
beforeAll(() => {
  if (!existsSync(CLI)) execFileSync('npx', ['electron-vite', 'build'], { cwd: ROOT, stdio: 'ignore' })
  dir = mkdtempSync(join(tmpdir(), 'burnrate-build-out-'))
})
afterAll(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL')
  rmSync(dir, { recursive: true, force: true })
})

describe('the built main process', () => {
  it('is ASCII in every chunk (one byte a character in V8)', () => {
    const js = files(OUT).filter((f) => f.endsWith('.js'))
    expect(js.length).toBeGreaterThan(5)
    const wide = js.filter((f) => /[\u0080-\uffff]/.test(readFileSync(f, 'utf8')))
    expect(wide).toEqual([])
  })

  it('has the price table as a JSON file, not in its code', () => {
    const all = files(OUT)
    const tables = all.filter((f) => /genai-prices-data-[\w-]+\.json$/.test(f))
    expect(tables).toHaveLength(1)
    const table = JSON.parse(readFileSync(tables[0], 'utf8')) as { id: string; models: { name?: string }[] }[]
    expect(table.find((p) => p.id === 'anthropic')?.models.some((m) => m.name === 'Claude 2.0 / 2.1')).toBe(true)
    for (const f of all.filter((x) => x.endsWith('.js'))) expect(readFileSync(f, 'utf8'), f).not.toContain('Claude 2.0 / 2.1')
  })

  it("has the price library without localeCompare (no ICU collator built to price a call)", () => {
    const library = files(OUT).filter((f) => f.endsWith('.js') && readFileSync(f, 'utf8').includes('genai-prices-data-'))
    expect(library).toHaveLength(1)
    const code = readFileSync(library[0], 'utf8')
    expect(code).toContain('genai-prices: provider data update rejected') // the library's code is in this chunk (bundled, not external)
    expect(code).not.toContain('localeCompare')
  })
})

describe('the built server prices with the moved table', () => {
  let upstream: MockUpstream
  beforeAll(async () => {
    upstream = await startMockUpstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('openai-chat/chat-nonstream-cached.json') }))
  })
  afterAll(async () => {
    await upstream?.close()
  })

  it("records a call's cost exactly as the library prices it", async () => {
    const cfg = join(dir, 'c.yaml')
    writeFileSync(cfg, `server: {host: 127.0.0.1, port: 0}\ntimezone: UTC\npricing: {auto_update: false}\nproviders: {openai: {base_url: "${upstream.url}/v1"}}\n`)
    const child = spawn(process.execPath, [CLI, '--config', cfg, '--data-dir', join(dir, 'data')], { stdio: ['ignore', 'pipe', 'pipe'] })
    children.add(child)
    const exit = new Promise<number | null>((r) => child.once('exit', (c) => r(c)))
    const url = await listeningUrl(child).url
    try {
      const r = await postJson(`${url}/openai/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }, { authorization: 'Bearer sk-build-output-0001' })
      expect(r.status).toBe(200)
      const answer = fixtureJson('openai-chat/chat-nonstream-cached.json') as { model: string; usage: { prompt_tokens: number; completion_tokens: number; prompt_tokens_details: { cached_tokens: number } } }
      const u = answer.usage
      const expected = calcPrice(
        { input_tokens: u.prompt_tokens, output_tokens: u.completion_tokens, cache_read_tokens: u.prompt_tokens_details.cached_tokens },
        answer.model,
        { providerId: 'openai' },
      )
      expect(expected?.total_price).toBeGreaterThan(0)
      await expect
        .poll(async () => (await request(`${url}/api/dashboard/summary`)).json() as { today_requests: number; today_spend_usd: number })
        .toMatchObject({ today_requests: 1, today_spend_usd: expected!.total_price })
    } finally {
      child.kill('SIGTERM')
      expect(await exit).toBe(0)
    }
  })
})
