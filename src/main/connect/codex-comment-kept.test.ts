import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { parse } from '@decimalturn/toml-patch'
import { AgentConnections } from './connections'

/**
 * Disconnect takes Burnrate's `openai_base_url` out of Codex's config.toml key by key when the
 * file cannot be put back from its copy (Burnrate made the file; it is not UTF-8 since). The TOML
 * editor took the comment above the key with it: Burnrate's key goes before the first table, under
 * the comment the user wrote above that table, and a comment the user wrote above Burnrate's key
 * went the same way. The user's comments stay.
 */
let home: string
let config: string
beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'burnrate-codex-comment-'))
  mkdirSync(join(home, '.codex'))
  config = join(home, '.codex', 'config.toml')
})
afterEach(() => rmSync(home, { recursive: true, force: true }))

const connections = () => new AgentConnections({ home, env: { PATH: '' }, platform: 'linux', dataDir: join(home, 'data') })
const URL = 'http://127.0.0.1:8787'

describe("Disconnect of Codex CLI, key by key: the user's comments in config.toml", () => {
  it('a comment written above Burnrate’s key, in a config.toml Burnrate made, stays', () => {
    connections().connect('codex', URL)
    expect(readFileSync(config, 'utf8')).toBe(`openai_base_url = "${URL}/v1"\n`)
    // The user documents the file and adds a profile of their own.
    writeFileSync(config, `# Codex: see the team wiki\nopenai_base_url = "${URL}/v1"\n\n[profiles.work]\nmodel = "o3"\n`)
    connections().disconnect('codex')
    expect(readFileSync(config, 'utf8')).toBe('# Codex: see the team wiki\n\n[profiles.work]\nmodel = "o3"\n')
  })

  it('a comment above the first table, in a config.toml that is not UTF-8 since, stays', () => {
    writeFileSync(config, '# my profiles\n[profiles.work]\nmodel = "o3"\n')
    connections().connect('codex', URL)
    expect(readFileSync(config, 'utf8')).toBe(`# my profiles\nopenai_base_url = "${URL}/v1"\n[profiles.work]\nmodel = "o3"\n`)
    // A line saved in Latin-1 since.
    writeFileSync(config, Buffer.from(`# my profiles\nopenai_base_url = "${URL}/v1"\n[profiles.work]\nmodel = "o3" # caf\xe9\n`, 'latin1'))
    connections().disconnect('codex')
    expect(readFileSync(config)).toEqual(Buffer.from('# my profiles\n[profiles.work]\nmodel = "o3" # caf\xe9\n', 'latin1'))
  })

  it('a comment ending a config.toml without a newline stays as it was, once', () => {
    connections().connect('codex', URL)
    // Saved by an editor that does not end the last line (VS Code's default), the profile last.
    const edited = `openai_base_url = "${URL}/v1"\n\n[profiles.work]\nmodel = "o3"\n# end of my profiles`
    writeFileSync(config, edited)
    connections().disconnect('codex')
    const after = readFileSync(config, 'utf8')
    expect(after).toBe('[profiles.work]\nmodel = "o3"\n# end of my profiles\n')
    const mine = parse(edited) as Record<string, unknown>
    delete mine.openai_base_url
    expect(parse(after)).toEqual(mine)
  })

  it('a comment line ended otherwise than the rest of config.toml (appended from PowerShell) stays once', () => {
    connections().connect('codex', URL)
    // A profile added in an editor (LF), and a note appended from PowerShell (Add-Content ends its
    // line with CRLF): the TOML editor ends every line alike, and the note was taken for one lost.
    const edited = `openai_base_url = "${URL}/v1"\n\n[profiles.work]\nmodel = "o3"\n# switch with: codex -p work\r\n`
    writeFileSync(config, edited)
    connections().disconnect('codex')
    const after = readFileSync(config, 'utf8')
    expect(after).toBe('[profiles.work]\nmodel = "o3"\n# switch with: codex -p work\n')
    expect(connections().list().find((a) => a.agent === 'codex')?.connected).toBe(false)
  })

  it('a config.toml saved with a byte order mark (Notepad) is disconnected, its comments kept', () => {
    connections().connect('codex', URL)
    // Two comments written above Burnrate's key, saved with a BOM: refused as "not valid TOML" before.
    writeFileSync(config, `\uFEFF# Codex\n# see the team wiki\nopenai_base_url = "${URL}/v1"\n\n[profiles.work]\nmodel = "o3"\n`)
    connections().disconnect('codex')
    expect(readFileSync(config, 'utf8')).toBe('\uFEFF# Codex\n# see the team wiki\n\n[profiles.work]\nmodel = "o3"\n')
    expect(connections().list().find((a) => a.agent === 'codex')?.connected).toBe(false)
    // One, with CRLF line endings: taken with the key before.
    connections().connect('codex', URL)
    writeFileSync(config, `\uFEFF# Codex\r\nopenai_base_url = "${URL}/v1"\r\n\r\n[profiles.work]\r\nmodel = "o3"\r\n`)
    connections().disconnect('codex')
    expect(readFileSync(config, 'utf8')).toBe('\uFEFF# Codex\r\n\r\n[profiles.work]\r\nmodel = "o3"\r\n')
  })
})
