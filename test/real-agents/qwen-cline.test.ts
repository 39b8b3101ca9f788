import { execFileSync } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { eventually } from '../support/http'
import { killLeftovers, processesOf, stopClineHub } from './cline-hub'
import { type Agent, KEYS, jsonLines, lastId, mock, newAgent, rowsAfter, run, settled, snippet, turn, useSuite } from './harness'

/**
 * Qwen Code and Cline's CLI, pinned in ./package.json, through Burnrate as the Connect panel's
 * (and README's) lines set them up: their calls under their own names (Qwen Code sends Claude
 * Code's User-Agent to an Anthropic-compatible address; Cline the AI SDK's), Qwen Code's under the
 * session id it names, and a budget refusal that stops each at once.
 */

useSuite()

/** Qwen Code's ~/.qwen/settings.json: the Connect panel's lines, with telemetry, usage statistics and updates off. */
function qwenSettings(agent: Agent): void {
  mkdirSync(join(agent.home, '.qwen'), { recursive: true })
  const settings = { ...JSON.parse(snippet('qwen-code', 0)), privacy: { usageStatisticsEnabled: false }, telemetry: { enabled: false }, general: { enableAutoUpdate: false } }
  writeFileSync(join(agent.home, '.qwen', 'settings.json'), JSON.stringify(settings))
}

/** `qwen … -o json` prints its events as one JSON array; its last is the run's result. */
function qwenResult(stdout: string): any {
  const events = JSON.parse(stdout) as any[]
  return events.find((e) => e.type === 'result')
}

/** The Connect panel's `cline auth …` line, run as given (its key from OPENAI_API_KEY). */
function clineAuth(agent: Agent): void {
  const line = snippet('cline', 0).split('\n')[0]
  expect(line).toMatch(/^cline auth /)
  execFileSync('sh', ['-c', line], { cwd: agent.cwd, env: agent.env, stdio: 'ignore', timeout: 120_000 })
}

/** Every Cline agent's HOME: whatever a failed test left under one is killed after it. */
const clineHomes: string[] = []
afterEach(() => killLeftovers(clineHomes))

function clineAgent(name: string, key: string): Agent {
  const agent = newAgent(name, { OPENAI_API_KEY: key })
  clineHomes.push(agent.home)
  clineAuth(agent)
  return agent
}

describe('Qwen Code and Cline through Burnrate', () => {
  it('Qwen Code: new, resumed and new sessions, each under its own session id, as qwen-code on its OpenAI and its Anthropic provider', async () => {
    const agent = newAgent('qwen', { OPENAI_API_KEY: KEYS.openai, ANTHROPIC_API_KEY: KEYS.anthropic })
    qwenSettings(agent)
    const ask = async (auth: string, model: string, extra: string[], prompt: string) => {
      const r = await turn(agent, 'qwen', ['--auth-type', auth, '-m', model, ...extra, '-o', 'json', prompt], 'qwen-code')
      const result = qwenResult(r.out.stdout)
      expect(result?.result).toContain('Burnrate mock answer')
      expect(r.session).toBe(result.session_id)
      // The X-Burnrate-Session header its settings add is Burnrate's own: never sent upstream.
      for (const e of r.exchanges) expect(e.headers['x-burnrate-session']).toBeUndefined()
      return { ...r, id: result.session_id as string }
    }
    const first = await ask('openai', 'gpt-4.1', [], 'Say hello.')
    expect(first.rows.every((r) => r.provider === 'openai' && r.endpoint === 'chat.completions')).toBe(true)
    expect(first.rows.some((r) => r.project === agent.cwd), `a call under project ${agent.cwd}: ${JSON.stringify(first.rows.map((r) => r.project))}`).toBe(true)
    const resumed = await ask('openai', 'gpt-4.1', ['--resume', first.id], 'Say it again.')
    expect(resumed.id).toBe(first.id)
    // Its Anthropic provider: Claude Code's User-Agent, recorded as Qwen Code's all the same.
    const second = await ask('anthropic', 'claude-sonnet-4-5', [], 'Something new.')
    expect(second.id).not.toBe(first.id)
    for (const e of second.exchanges) expect(e.headers['user-agent']).toMatch(/^claude-cli\//)
    expect(second.rows.every((r) => r.provider === 'anthropic')).toBe(true)
  })

  it('Qwen Code: a budget refusal is reported at once and not retried after its Retry-After', async () => {
    const agent = newAgent('qwen-blocked', { OPENAI_API_KEY: 'sk-blocked-burnrate-suite-0000000007', ANTHROPIC_API_KEY: KEYS.anthropic })
    qwenSettings(agent)
    const beforeRow = lastId()
    const beforeEx = mock.exchanges.length
    // Stranded (waiting out a daily Retry-After), it is killed by run()'s timer: code null.
    const out = await run(agent, 'qwen', ['--auth-type', 'openai', '-m', 'gpt-4.1', '-o', 'json', 'Say hello.'])
    expect(out.code, out.stdout.slice(-2000) + out.stderr.slice(-2000)).toBe(1)
    expect(qwenResult(out.stdout)).toMatchObject({ is_error: true, error: { message: expect.stringMatching(/403 .*budget rule "sk-blocked-\*"/) } })
    expect(mock.exchanges.length).toBe(beforeEx)
    await settled()
    const rows = (await eventually(() => {
      const r = rowsAfter(beforeRow)
      return r.length > 0 ? r : undefined
    }, 15_000)) as any[]
    expect(rows).toHaveLength(1)
    expect(rows[0]).toMatchObject({ status: 429, error: 'budget_exceeded', agent: 'qwen-code', cost_usd: 0, project: agent.cwd })
  })

  it('Cline CLI: sends no session id, so its two runs share one inferred session; every call recorded as cline', async () => {
    const agent = clineAgent('cline', KEYS.openai)
    const ask = async (prompt: string) => {
      const r = await turn(agent, 'cline', ['--json', prompt], 'cline')
      // The hub daemon it leaves running (as it does for its users), stopped the way its own CLI stops it.
      if (process.platform === 'linux') expect(processesOf(agent.home).length, 'a Cline hub daemon left running').toBeGreaterThan(0)
      await stopClineHub(agent)
      expect(jsonLines(r.out.stdout).find((e) => e.type === 'run_result')).toMatchObject({ finishReason: 'completed', text: expect.stringContaining('Burnrate mock answer') })
      for (const e of r.exchanges) expect(e.headers['user-agent']).toMatch(/^ai-sdk\//)
      expect(r.rows.every((row) => row.provider === 'openai' && row.project === agent.cwd)).toBe(true)
      return r
    }
    const first = await ask('Say hello.')
    const second = await ask('Something new.')
    expect(first.session).toMatch(/^auto-/)
    expect(second.session).toBe(first.session)
  })

  it('Cline CLI: a budget refusal is reported at once and not retried', async () => {
    const agent = clineAgent('cline-blocked', 'sk-blocked-burnrate-suite-0000000008')
    const beforeRow = lastId()
    const beforeEx = mock.exchanges.length
    const out = await run(agent, 'cline', ['--json', 'Say hello.'])
    await stopClineHub(agent)
    expect(out.code, out.stdout.slice(-2000) + out.stderr.slice(-2000)).toBe(1)
    expect(jsonLines(out.stdout).find((e) => e.type === 'run_result')).toMatchObject({ finishReason: 'error', text: expect.stringMatching(/budget rule "sk-blocked-\*"/) })
    expect(mock.exchanges.length).toBe(beforeEx)
    await settled()
    const rows = (await eventually(() => {
      const r = rowsAfter(beforeRow)
      return r.length > 0 ? r : undefined
    }, 15_000)) as any[]
    // Its five retries over a minute, with a 429, would be five more rows.
    expect(rows).toHaveLength(1)
    expect(rows[0]).toMatchObject({ status: 429, error: 'budget_exceeded', agent: 'cline', cost_usd: 0 })
  })
})
