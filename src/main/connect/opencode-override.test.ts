import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { AgentConnections } from './connections'

/**
 * opencode (1.18) merges its config files deeply, each over the ones before: its global file (the
 * one Burnrate edits), then the file $OPENCODE_CONFIG names, a project's, ~/.opencode's,
 * $OPENCODE_CONFIG_DIR's, $OPENCODE_CONFIG_CONTENT and a managed folder's. A later one setting the
 * Anthropic provider's baseURL elsewhere sends opencode's calls there, around Burnrate.
 */
const URL = 'http://127.0.0.1:8787'
const GATEWAY = { provider: { anthropic: { options: { baseURL: 'https://gateway.example/v1' } } } }

let home: string
beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'burnrate-opencode-override-'))
  mkdirSync(join(home, '.config', 'opencode'), { recursive: true })
  writeFileSync(join(home, '.config', 'opencode', 'opencode.json'), '{ "model": "anthropic/claude-sonnet-4-5" }\n')
})
afterEach(() => {
  rmSync(home, { recursive: true, force: true })
})

const connections = (env: NodeJS.ProcessEnv = {}) =>
  new AgentConnections({ home, env: { PATH: '', OPENCODE_TEST_MANAGED_CONFIG_DIR: join(home, 'managed'), ...env }, platform: 'linux', dataDir: join(home, 'data') })
const warningsOf = (conn: AgentConnections) => conn.list().find((a) => a.agent === 'opencode')!.warnings
const write = (path: string, v: unknown) => {
  mkdirSync(join(path, '..'), { recursive: true })
  writeFileSync(path, JSON.stringify(v, null, 2) + '\n')
}

describe('opencode with config read after the global file Burnrate edits', () => {
  it('~/.opencode/opencode.json setting another baseURL: connects all the same, and the plan and the agent list say its calls go around Burnrate', () => {
    write(join(home, '.opencode', 'opencode.json'), GATEWAY)
    const conn = connections()
    const plan = conn.connect('opencode', URL)
    expect(JSON.parse(readFileSync(join(home, '.config', 'opencode', 'opencode.json'), 'utf8')).provider.anthropic.options.baseURL).toBe(`${URL}/v1`)
    const warning =
      '~/.opencode/opencode.json sets provider.anthropic.options.baseURL to "https://gateway.example/v1": opencode reads it after ~/.config/opencode/opencode.json, where Burnrate sets it, so it sends its Anthropic calls there and Burnrate does not meter them. ' +
      `To meter them, remove it there, or set it to ${URL}/v1.`
    expect(plan.notes).toContain(warning)
    expect(warningsOf(conn)).toEqual([warning])
    // Pointed at Burnrate there too: its calls are metered.
    write(join(home, '.opencode', 'opencode.json'), { provider: { anthropic: { options: { baseURL: `http://localhost:8787/v1` } } } })
    expect(warningsOf(conn)).toEqual([])
  })

  it('OPENCODE_CONFIG and OPENCODE_CONFIG_CONTENT where Burnrate runs: the last one setting it decides', () => {
    const custom = join(home, 'custom.json')
    write(custom, GATEWAY)
    const conn = connections({ OPENCODE_CONFIG: custom })
    expect(conn.connect('opencode', URL).notes.join('\n')).toContain('~/custom.json (OPENCODE_CONFIG) sets provider.anthropic.options.baseURL to "https://gateway.example/v1"')
    // OPENCODE_CONFIG_CONTENT comes after it, and points at Burnrate ({env:…} as opencode substitutes it).
    const content = JSON.stringify({ provider: { anthropic: { options: { baseURL: '{env:BR}/v1' } } } })
    expect(warningsOf(connections({ OPENCODE_CONFIG: custom, OPENCODE_CONFIG_CONTENT: content, BR: URL }))).toEqual([])
    // A managed folder's file comes after all of them.
    write(join(home, 'managed', 'opencode.jsonc'), GATEWAY)
    expect(warningsOf(connections({ OPENCODE_CONFIG: custom, OPENCODE_CONFIG_CONTENT: content, BR: URL }))[0]).toContain('~/managed/opencode.jsonc sets provider.anthropic.options.baseURL')
  })

  it('later config that does not set the baseURL (a model, a theme), or none: nothing to say', () => {
    const custom = join(home, 'custom.json')
    write(custom, { model: 'anthropic/claude-opus-4-1' })
    write(join(home, '.opencode', 'opencode.jsonc'), { theme: 'dark' })
    const conn = connections({ OPENCODE_CONFIG: custom, OPENCODE_CONFIG_CONTENT: '{"autoupdate": false}' })
    expect(conn.connect('opencode', URL).notes.join('\n')).not.toContain('does not meter')
    expect(warningsOf(conn)).toEqual([])
  })
})
