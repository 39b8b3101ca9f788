import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'

/**
 * A config file whose setting would silently do nothing stops `burnrate serve` (the built CLI)
 * with one line naming the file and the key, rather than a server that listens and ignores it.
 */

const ROOT = resolve(__dirname, '../..')
const CLI = join(ROOT, 'out/main/cli.js')
const env = { ...process.env, BURNRATE_PRICE_AUTO_UPDATE: 'false', BURNRATE_CONFIG: '', BURNRATE_PORT: '', BURNRATE_DATA_DIR: '', BURNRATE_HOST: '', BURNRATE_DATABASE_URL: '' }

let dir: string
const children: ChildProcess[] = []
beforeAll(() => {
  if (!existsSync(CLI)) execFileSync('npx', ['electron-vite', 'build'], { cwd: ROOT, stdio: 'ignore' })
})
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'burnrate-config-'))
})
afterEach(() => {
  for (const c of children.splice(0)) c.kill('SIGKILL')
  rmSync(dir, { recursive: true, force: true })
})

/** Starts the server on `yaml`: how it ended (its exit code and stderr), or that it listened. */
function serve(yaml: string): Promise<{ listening: true } | { code: number | null; stderr: string }> {
  const cfg = join(dir, 'config.yaml')
  writeFileSync(cfg, yaml)
  const child = spawn(process.execPath, [CLI, 'serve', '--config', cfg, '--data-dir', join(dir, 'data'), '--port', '0'], { env, stdio: ['ignore', 'pipe', 'pipe'] })
  children.push(child)
  let out = ''
  let stderr = ''
  return new Promise((done) => {
    const on = (d: Buffer) => {
      out += d
      if (/listening on http:\/\//.test(out)) done({ listening: true })
    }
    child.stdout!.on('data', on)
    child.stderr!.on('data', (d: Buffer) => {
      stderr += d
      on(d)
    })
    child.once('exit', (code) => done({ code, stderr: stderr.trim() }))
  })
}

const file = () => join(dir, 'config.yaml')

describe('a config file that would start a server ignoring a money setting', () => {
  it('refuses a price override whose model has a "*" elsewhere than at its end (it would match no call: the library price instead)', async () => {
    const r = await serve('pricing:\n  overrides:\n    - { model: "gpt-4o*-mini", provider: openai, input_mtok: 100, output_mtok: 100 }\n')
    expect(r).toEqual({
      code: 1,
      stderr: `burnrate: config ${file()}: pricing.overrides[0].model: "gpt-4o*-mini": "*" is only allowed once, at the end (a whole model name, or a prefix followed by "*")`,
    })
  })

  it.each(['*-mini', 'gpt-**'])('refuses %s too (a suffix pattern, a "*" twice)', async (model) => {
    const r = await serve(`pricing:\n  overrides:\n    - { model: "${model}", input_mtok: 1, output_mtok: 2 }\n`)
    expect(r).toMatchObject({ code: 1, stderr: expect.stringContaining(`config ${file()}: pricing.overrides[0].model: "${model}": "*" is only allowed once, at the end`) })
  })

  it.each(['^gpt-4o$', 'claude-.*', 'gpt-4o(-mini)?'])('refuses a price override whose model is a regular expression, %s (matched as a name, it would price no call)', async (model) => {
    const r = await serve(`pricing:\n  overrides:\n    - { model: "${model}", input_mtok: 1, output_mtok: 2 }\n`)
    expect(r).toEqual({
      code: 1,
      stderr: `burnrate: config ${file()}: pricing.overrides[0].model: ${JSON.stringify(model)} looks like a regular expression; a model is a whole name, or a prefix followed by one "*" (e.g. "claude-sonnet-4-5*")`,
    })
  })

  it.each(['gpt-4.*', 'us.anthropic.claude-sonnet-4-5-20250929-v1:0', 'anthropic/claude-3.5-sonnet', 'claude-3-5-sonnet@20240620', '*'])('starts with a price override for %s', async (model) => {
    expect(await serve(`pricing:\n  overrides:\n    - { model: "${model}", input_mtok: 1, output_mtok: 2 }\n`)).toEqual({ listening: true })
  })

  it('refuses a price override an earlier one hides (the first that matches prices a call): it would never price one', async () => {
    const hidden = await serve(
      'pricing:\n  overrides:\n    - { model: "gpt-4o*", provider: openai, input_mtok: 2.5, output_mtok: 10 }\n    - { model: "gpt-4o-mini", provider: openai, input_mtok: 0.15, output_mtok: 0.6 }\n',
    )
    expect(hidden).toEqual({
      code: 1,
      stderr: `burnrate: config ${file()}: pricing.overrides[1]: never prices a call: pricing.overrides[0] (model "gpt-4o*", provider openai) matches every call it would, and the first entry that matches prices a call; put the narrower one first`,
    })
    const twice = await serve('pricing:\n  overrides:\n    - { model: "my-ft", input_mtok: 1, output_mtok: 2 }\n    - { model: "MY-FT", provider: openai, input_mtok: 3, output_mtok: 4 }\n')
    expect(twice).toMatchObject({ code: 1, stderr: expect.stringContaining('pricing.overrides[1]: never prices a call: pricing.overrides[0] (model "my-ft", any provider)') })
  })

  it('starts with overrides that each price some call (narrower first, another provider, another speed)', async () => {
    const r = await serve(
      'pricing:\n  overrides:\n' +
        '    - { model: "gpt-4o-mini", provider: openai, input_mtok: 0.15, output_mtok: 0.6 }\n' +
        '    - { model: "gpt-4o*", provider: openai, input_mtok: 2.5, output_mtok: 10 }\n' +
        '    - { model: "gpt-4o*", provider: azure, input_mtok: 2.5, output_mtok: 10 }\n' +
        '    - { model: "gpt-4o*", provider: openai, speed: fast, input_mtok: 5, output_mtok: 20 }\n' +
        '    - { model: "gpt-*", input_mtok: 1, output_mtok: 1 }\n',
    )
    expect(r).toEqual({ listening: true })
  })

  it('refuses runaway.spend_rate.action: block without usd_per_minute (there is no rate to exceed: nothing would be blocked)', async () => {
    expect(await serve('runaway:\n  spend_rate:\n    action: block\n')).toEqual({
      code: 1,
      stderr: `burnrate: config ${file()}: runaway.spend_rate.usd_per_minute: expected a number of US dollars because runaway.spend_rate.action is block; without it nothing is blocked`,
    })
    expect(await serve('runaway:\n  spend_rate:\n    action: block\n    usd_per_minute: 0.5\n')).toEqual({ listening: true })
  })

  it.each([
    ['openai', 'deployments', '{ my-gpt4o: gpt-4o }', 'azure'],
    ['anthropic', 'profiles', '{ a1b2c3d4e5f6: us.anthropic.claude-sonnet-4-5-20250929-v1:0 }', 'bedrock'],
  ])('refuses providers.%s.%s, which only one provider reads (its calls would be priced by the unmapped name)', async (name, key, value, only) => {
    const r = await serve(`providers:\n  ${name}:\n    ${key}: ${value}\n`)
    expect(r).toMatchObject({ code: 1, stderr: expect.stringContaining(`burnrate: config ${file()}: providers.${name}.${key}: only providers.${only} has ${key}`) })
  })
})

describe("the config file's data_dir", () => {
  /** A server started in `cwd` on the config file `cfg`: the data folder its start line names, or what it said when it exited. */
  function start(cfg: string, cwd: string, home: string): Promise<{ data: string } | { code: number | null; stderr: string }> {
    const child = spawn(process.execPath, [CLI, 'serve', '--config', cfg, '--port', '0'], { cwd, env: { ...env, HOME: home }, stdio: ['ignore', 'pipe', 'pipe'] })
    children.push(child)
    let out = ''
    let stderr = ''
    return new Promise((done) => {
      const on = (d: Buffer) => {
        out += d
        const m = /listening on http:\/\/\S+ \(data: (.*), config: /.exec(out)
        if (m) done({ data: m[1] })
      }
      child.stdout!.on('data', on)
      child.stderr!.on('data', (d: Buffer) => {
        stderr += d
        on(d)
      })
      child.once('exit', (code) => done({ code, stderr: stderr.trim() }))
    })
  }

  it("is one folder whichever folder the server is started in: a relative path is taken from the config file's folder", async () => {
    for (const d of ['etc', 'a', 'b']) mkdirSync(join(dir, d))
    const cfg = join(dir, 'etc', 'config.yaml')
    writeFileSync(cfg, 'data_dir: ledger\n')
    const ledger = join(dir, 'etc', 'ledger')
    expect(await start(cfg, join(dir, 'a'), dir)).toEqual({ data: ledger })
    // Started in another folder on the same config, a second server would keep a second ledger and
    // second budget meters (a block rule's limit admitted twice), the data-folder lock blind to it.
    expect(await start(cfg, join(dir, 'b'), dir)).toMatchObject({ code: 1, stderr: expect.stringContaining(`serves this data folder ${ledger} at http://`) })
  })

  it('refuses to start on an empty ledger where an earlier release, reading the path from the working folder, kept the ledger', async () => {
    for (const d of ['etc', 'a']) mkdirSync(join(dir, d))
    const cfg = join(dir, 'etc', 'config.yaml')
    writeFileSync(cfg, 'data_dir: ledger\n')
    // Where releases before 056600c put it when started in a/: its spend and budget meters.
    mkdirSync(join(dir, 'a', 'ledger'))
    writeFileSync(join(dir, 'a', 'ledger', 'burnrate.db'), '')
    const r = await start(cfg, join(dir, 'a'), dir)
    expect(r).toMatchObject({ code: 1, stderr: expect.stringContaining(`data_dir: "ledger" is ${join(dir, 'etc', 'ledger')}`) })
    expect((r as { stderr: string }).stderr).toContain(join(dir, 'a', 'ledger'))
    expect(existsSync(join(dir, 'etc', 'ledger'))).toBe(false)
    // Once the ledger is where the config now says, it starts there.
    renameSync(join(dir, 'a', 'ledger'), join(dir, 'etc', 'ledger'))
    expect(await start(cfg, join(dir, 'a'), dir)).toEqual({ data: join(dir, 'etc', 'ledger') })
  })

  it('~/ in it is the home folder, not a folder named "~"', async () => {
    mkdirSync(join(dir, 'a'))
    const cfg = join(dir, 'config.yaml')
    writeFileSync(cfg, 'data_dir: ~/burnrate-ledger\n')
    expect(await start(cfg, join(dir, 'a'), dir)).toEqual({ data: join(dir, 'burnrate-ledger') })
  })
})
