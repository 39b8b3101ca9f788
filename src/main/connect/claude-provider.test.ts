import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { AgentConnections } from './connections'

/**
 * Claude Code calls Amazon Bedrock when CLAUDE_CODE_USE_BEDROCK is on, Vertex AI when
 * CLAUDE_CODE_USE_VERTEX is, Microsoft Foundry when CLAUDE_CODE_USE_FOUNDRY is (in that order),
 * each at its own address variable, never ANTHROPIC_BASE_URL. Burnrate writes Vertex AI's
 * (ANTHROPIC_VERTEX_BASE_URL) but not Bedrock's nor Foundry's: on those, a connected Claude Code
 * sends its calls around Burnrate.
 */
const URL = 'http://127.0.0.1:8787'

let home: string
beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'burnrate-claude-provider-'))
})
afterEach(() => {
  rmSync(home, { recursive: true, force: true })
})

const file = () => join(home, '.claude', 'settings.json')
function settings(env: Record<string, string>): void {
  mkdirSync(join(home, '.claude'), { recursive: true })
  writeFileSync(file(), JSON.stringify({ model: 'opus', env }, null, 2) + '\n')
}
const connections = (env: NodeJS.ProcessEnv = {}) => new AgentConnections({ home, env: { PATH: '', ...env }, platform: 'linux', dataDir: join(home, 'data') })
const warningsOf = (conn: AgentConnections) => conn.list().find((a) => a.agent === 'claude-code')!.warnings

describe('Claude Code on a cloud platform whose address Burnrate does not write', () => {
  it('Bedrock turned on in its settings: connects all the same, and the plan and the agent list say its calls go around Burnrate', () => {
    settings({ CLAUDE_CODE_USE_BEDROCK: '1', AWS_REGION: 'us-east-1' })
    const conn = connections()
    const plan = conn.connect('claude-code', URL)
    expect(readFileSync(file(), 'utf8')).toContain(`"ANTHROPIC_BASE_URL": "${URL}"`)
    const warning =
      'CLAUDE_CODE_USE_BEDROCK is on (env.CLAUDE_CODE_USE_BEDROCK in ~/.claude/settings.json): Claude Code then calls Amazon Bedrock, which reads neither ANTHROPIC_BASE_URL nor ANTHROPIC_VERTEX_BASE_URL, the addresses Burnrate sets, so it sends its calls to Amazon Bedrock directly and Burnrate does not meter them. ' +
      `To meter them, set ANTHROPIC_BEDROCK_BASE_URL=${URL}/bedrock/<your region> beside it (README: Point your agents at it).`
    expect(plan.notes).toContain(warning)
    const claude = conn.list().find((a) => a.agent === 'claude-code')!
    expect(claude.connected).toBe(true)
    expect(claude.warnings).toEqual([warning])

    // Its Bedrock address pointed at Burnrate by hand (README's line): its calls are metered.
    const v = JSON.parse(readFileSync(file(), 'utf8'))
    v.env.ANTHROPIC_BEDROCK_BASE_URL = `${URL}/bedrock/us-east-1`
    writeFileSync(file(), JSON.stringify(v, null, 2) + '\n')
    expect(warningsOf(conn)).toEqual([])
  })

  it('Foundry turned on in the environment here, and not in the settings: said; turned off in the settings, which Claude Code reads over it: not', () => {
    settings({})
    const conn = connections({ CLAUDE_CODE_USE_FOUNDRY: 'true' })
    const plan = conn.connect('claude-code', URL)
    expect(plan.notes.join('\n')).toContain(
      `CLAUDE_CODE_USE_FOUNDRY is on (the environment here): Claude Code then calls Microsoft Foundry, which reads neither ANTHROPIC_BASE_URL nor ANTHROPIC_VERTEX_BASE_URL, the addresses Burnrate sets, so it sends its calls to Microsoft Foundry directly and Burnrate does not meter them. To meter them, set ANTHROPIC_FOUNDRY_BASE_URL=${URL}/foundry/anthropic beside it`,
    )
    expect(warningsOf(conn)).toHaveLength(1)
    const v = JSON.parse(readFileSync(file(), 'utf8'))
    v.env.CLAUDE_CODE_USE_FOUNDRY = '0'
    writeFileSync(file(), JSON.stringify(v, null, 2) + '\n')
    expect(warningsOf(conn)).toEqual([])
  })

  it('Vertex AI (whose address Burnrate writes), or Anthropic itself: nothing to say', () => {
    settings({ CLAUDE_CODE_USE_VERTEX: '1', CLAUDE_CODE_USE_FOUNDRY: '1' })
    const conn = connections()
    expect(conn.connect('claude-code', URL).notes.join('\n')).not.toContain('does not meter')
    expect(warningsOf(conn)).toEqual([])
    conn.disconnect('claude-code')
    settings({ CLAUDE_CODE_USE_BEDROCK: 'false' })
    expect(conn.connect('claude-code', URL).notes.join('\n')).not.toContain('does not meter')
    expect(warningsOf(conn)).toEqual([])
  })
})
