import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { AgentConnections } from './connections'

/**
 * Codex picks its model provider from `model_provider`, or the active profile's (`profile` names
 * it), else its built-in `openai`; `openai_base_url`, which Burnrate sets, moves only that
 * built-in one. A config that picks another provider sends Codex's calls around Burnrate.
 */
const URL = 'http://127.0.0.1:8787'

let home: string
beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'burnrate-codex-provider-'))
})
afterEach(() => {
  rmSync(home, { recursive: true, force: true })
})

const file = () => join(home, '.codex', 'config.toml')
function codexConfig(text: string): void {
  mkdirSync(join(home, '.codex'), { recursive: true })
  writeFileSync(file(), text)
}
const connections = () => new AgentConnections({ home, env: { PATH: '' }, platform: 'linux', dataDir: join(home, 'data') })
const warningsOf = (conn: AgentConnections) => conn.list().find((a) => a.agent === 'codex')!.warnings

const AZURE = '[model_providers.azure]\nname = "Azure"\nbase_url = "https://me.openai.azure.com/openai"\nenv_key = "AZURE_OPENAI_API_KEY"\n'

describe('codex with a model provider of its own', () => {
  it('model_provider at the top: connects all the same, and the plan and the agent list say its calls go around Burnrate', () => {
    codexConfig(`model_provider = "azure"\n\n${AZURE}`)
    const conn = connections()
    const plan = conn.connect('codex', URL)
    expect(readFileSync(file(), 'utf8')).toContain(`openai_base_url = "${URL}/v1"`)
    const warning =
      '~/.codex/config.toml chooses the model provider "azure" (model_provider = "azure"): openai_base_url, which Burnrate sets, applies only to Codex\'s built-in OpenAI provider, so Codex sends its calls to that provider directly and Burnrate does not meter them. ' +
      `To meter them, remove model_provider (Codex then uses the built-in provider), or give Codex a provider whose base_url is ${URL}/v1 (README: Point your agents at it).`
    expect(plan.notes).toContain(warning)
    const codex = conn.list().find((a) => a.agent === 'codex')!
    expect(codex.connected).toBe(true)
    expect(codex.warnings).toEqual([warning])

    // Taken out by hand: the list stops warning.
    writeFileSync(file(), readFileSync(file(), 'utf8').replace('model_provider = "azure"\n', ''))
    expect(warningsOf(conn)).toEqual([])
  })

  it("through the active profile's model_provider, which wins over the top-level one", () => {
    codexConfig(`profile = "work"\nmodel_provider = "openai"\n\n${AZURE}\n[profiles.work]\nmodel = "gpt-5"\nmodel_provider = "azure"\n`)
    const conn = connections()
    const plan = conn.connect('codex', URL)
    expect(plan.notes.join('\n')).toContain('chooses the model provider "azure" (profiles.work.model_provider = "azure", the profile "work" that profile = "work" makes active)')
    expect(warningsOf(conn)).toHaveLength(1)
    expect(warningsOf(conn)[0]).toContain('remove profiles.work.model_provider')
  })

  it('no warning when the provider is the built-in one: none chosen, "openai", or a profile that chooses it over the top level', () => {
    for (const text of [
      `model = "o3"\n\n${AZURE}`,
      `model_provider = "openai"\n`,
      `profile = "mine"\nmodel_provider = "azure"\n\n${AZURE}\n[profiles.mine]\nmodel_provider = "openai"\n`,
      // A profile that is not the active one does not count.
      `${AZURE}\n[profiles.work]\nmodel_provider = "azure"\n`,
    ]) {
      codexConfig(text)
      const conn = connections()
      expect(conn.planConnect('codex', URL).notes.filter((n) => n.includes('model provider')), text).toEqual([])
      conn.connect('codex', URL)
      expect(warningsOf(conn), text).toEqual([])
      conn.disconnect('codex')
      expect(readFileSync(file(), 'utf8')).toBe(text)
    }
  })

  it('no warning for a provider of its own whose base_url is this Burnrate (README: Point your agents at it)', () => {
    codexConfig(`model_provider = "burnrate"\n\n[model_providers.burnrate]\nname = "OpenAI via Burnrate"\nbase_url = "${URL}/v1"\nenv_key = "OPENAI_API_KEY"\n`)
    const conn = connections()
    expect(conn.connect('codex', URL).notes.filter((n) => n.includes('model provider'))).toEqual([])
    expect(warningsOf(conn)).toEqual([])
  })

  it('no warning when that base_url names this Burnrate as localhost (the same loopback port), but one for another port', () => {
    codexConfig(`model_provider = "burnrate"\n\n[model_providers.burnrate]\nname = "OpenAI via Burnrate"\nbase_url = "http://localhost:8787/v1"\nenv_key = "OPENAI_API_KEY"\n`)
    const conn = connections()
    expect(conn.connect('codex', URL).notes.filter((n) => n.includes('model provider'))).toEqual([])
    expect(warningsOf(conn)).toEqual([])
    conn.disconnect('codex')
    codexConfig(`model_provider = "burnrate"\n\n[model_providers.burnrate]\nname = "OpenAI via Burnrate"\nbase_url = "http://localhost:9999/v1"\nenv_key = "OPENAI_API_KEY"\n`)
    conn.connect('codex', URL)
    expect(warningsOf(conn)).toHaveLength(1)
  })

  it("warns for a built-in provider other than OpenAI's, whose base_url Codex does not take from the file", () => {
    codexConfig(`model_provider = "amazon-bedrock"\n\n[model_providers.amazon-bedrock]\nbase_url = "${URL}/v1"\n`)
    const conn = connections()
    expect(conn.connect('codex', URL).notes.join('\n')).toContain('chooses the model provider "amazon-bedrock"')
    expect(warningsOf(conn)).toHaveLength(1)
  })

  it('an agent not connected has no warnings in the list (its plan says it before connecting)', () => {
    codexConfig(`model_provider = "azure"\n\n${AZURE}`)
    const conn = connections()
    expect(warningsOf(conn)).toEqual([])
    expect(conn.planConnect('codex', URL).notes.join('\n')).toContain('chooses the model provider "azure"')
  })
})
