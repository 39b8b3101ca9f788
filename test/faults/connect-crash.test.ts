import { spawn, spawnSync } from 'node:child_process'
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { beforeEach, afterEach, describe, expect, it } from 'vitest'
import { AgentConnections } from '../../src/main/connect/connections'
import { processStart } from '../../src/main/server/data-lock'
import { bundledChild } from './connect-child'

/**
 * A connect or disconnect killed (SIGKILL, in a child process) right after each of its changes to
 * the disk in turn, then Disconnect run as after a restart: the user's files come back exactly as
 * they were before Burnrate (bytes and mode), with nothing of Burnrate's left in their folders.
 */

const URL_A = 'http://127.0.0.1:8787'
const URL_B = 'http://127.0.0.1:8799'
const ENV = { PATH: '', SHELL: '/bin/zsh' }

const bundled = bundledChild('connect-step', 'burnrate-connect-step-')

let home: string
let dataDir: string
beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'burnrate-crash-home-'))
  dataDir = join(home, 'burnrate-data')
})
afterEach(() => rmSync(home, { recursive: true, force: true }))

const connections = (env: Record<string, string> = {}) => new AgentConnections({ home, env: { ...ENV, ...env }, platform: 'linux', dataDir })

/** The changes to the disk a run made up to and including the first operation `at` matches. */
function changesUntil(ran: Ran, at: (o: { op: string; path: string }) => boolean): number {
  let n = 0
  for (const o of ran.ops) {
    if (CHANGES.has(o.op)) n++
    if (at(o)) return n
  }
  throw new Error('no such operation')
}
const CHANGES = new Set(['writeFileSync', 'writeSync', 'renameSync', 'rmSync', 'unlinkSync', 'rmdirSync', 'mkdirSync', 'linkSync', 'copyFileSync'])

interface Ran {
  killed: boolean
  changes: number
  ops: { op: string; path: string }[]
}

function step(op: 'connect' | 'disconnect', agent: string, url: string, killAfter: number, env: Record<string, string> = {}, now?: string): Ran {
  const args = [bundled(), home, dataDir, op, agent, url, String(killAfter), JSON.stringify({ ...ENV, ...env }), ...(now ? [now] : [])]
  const r = spawnSync(process.execPath, args, { encoding: 'utf8', timeout: 60_000 })
  if (r.signal === 'SIGKILL') return { killed: true, changes: killAfter, ops: [] }
  if (r.status !== 0) throw new Error(`child failed (${r.status} ${r.signal}): ${r.stderr}`)
  return { killed: false, ...JSON.parse(r.stdout) }
}

function put(rel: string, text: string, mode = 0o644): string {
  const path = join(home, rel)
  mkdirSync(dirname(path), { recursive: true })
  writeFileSync(path, text)
  chmodSync(path, mode)
  return path
}

/** Every file under `dir` (relative), with its bytes and mode; Burnrate's data folder left out. */
function snapshot(dir = home): Record<string, string> {
  const out: Record<string, string> = {}
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name)
      if (p === dataDir) continue
      const rel = p.slice(home.length + 1)
      if (e.isSymbolicLink()) out[rel] = `-> ${readlinkSync(p)}`
      else if (e.isDirectory()) {
        out[`${rel}/`] = (statSync(p).mode & 0o777).toString(8)
        walk(p)
      } else out[rel] = `${(statSync(p).mode & 0o777).toString(8)} ${readFileSync(p, 'latin1')}`
    }
  }
  walk(dir)
  return out
}

/**
 * Runs `setup`, then `op` killed after its 1st, 2nd, … change to the disk until it runs to the
 * end; after each, Disconnect (a new process's AgentConnections) must give back `original`.
 */
function everyCrash(opts: { setup: () => void; op: 'connect' | 'disconnect'; agent: string; url: string; env?: Record<string, string>; now?: string }): Ran {
  for (let k = 1; ; k++) {
    rmSync(home, { recursive: true, force: true })
    mkdirSync(home, { recursive: true })
    opts.setup()
    const ran = step(opts.op, opts.agent, opts.url, k, opts.env, opts.now)
    const conn = connections(opts.env)
    conn.disconnect(opts.agent)
    // Also no temporary file of Burnrate's left in the user's folders.
    expect(snapshot(), `killed after change ${k} of the ${opts.op}`).toEqual(original)
    expect(conn.connected(), `killed after change ${k}`).toEqual([])
    // Nor a copy of the user's files (their keys in it) left in Burnrate's data folder once disconnected.
    expect(dataFiles().filter((f) => f !== 'agent-connections.json'), `killed after change ${k}`).toEqual([])
    if (!ran.killed) return ran
  }
}

/** The files in Burnrate's data folder (relative). */
function dataFiles(): string[] {
  try {
    return readdirSync(dataDir, { recursive: true, withFileTypes: true })
      .filter((e) => !e.isDirectory())
      .map((e) => join(e.parentPath, e.name).slice(dataDir.length + 1))
      .sort()
  } catch {
    return []
  }
}

/** What the user had before Burnrate touched anything: what Disconnect must come back to. */
let original: Record<string, string> = {}
function originalIsNow(): void {
  original = snapshot()
}

const CLAUDE = `{
    // mine
    "model": "opus",
    "env": { "ANTHROPIC_API_KEY": "sk-ant-keep-me" }
}
`

describe('a connect or disconnect killed after any of its writes', () => {
  it('first connect of an existing file (a mode of its own): Disconnect after the crash gives back the very file', () => {
    const ran = everyCrash({
      setup: () => {
        put('.claude/settings.json', CLAUDE, 0o640)
        originalIsNow()
      },
      op: 'connect',
      agent: 'claude-code',
      url: URL_A,
    })
    expect(ran.changes).toBeGreaterThan(2)
  })

  it('first connect that makes the file and its folder: Disconnect after the crash leaves neither', () => {
    everyCrash({
      setup: () => {
        mkdirSync(join(home, '.config'), { recursive: true })
        originalIsNow()
      },
      op: 'connect',
      agent: 'gemini-cli',
      url: URL_A,
    })
  })

  it('a re-point to another address', () => {
    everyCrash({
      setup: () => {
        put('.claude/settings.json', CLAUDE, 0o600)
        originalIsNow()
        connections().connect('claude-code', URL_A)
      },
      op: 'connect',
      agent: 'claude-code',
      url: URL_B,
    })
  })

  it('a re-point that writes one file and puts another back (opencode.jsonc made beside opencode.json)', () => {
    const env = { XDG_CONFIG_HOME: join(home, '.config') }
    everyCrash({
      setup: () => {
        put('.config/opencode/opencode.json', '{\n  // mine\n  "theme": "nord"\n}\n')
        connections(env).connect('opencode', URL_A)
        put('.config/opencode/opencode.jsonc', '{\n  "theme": "dark"\n}\n')
        // Disconnect puts back opencode.json as it was, and leaves the user's new opencode.jsonc.
        const json = readFileSync(join(home, '.config/opencode/opencode.json'), 'utf8')
        writeFileSync(join(home, '.config/opencode/opencode.json'), '{\n  // mine\n  "theme": "nord"\n}\n')
        originalIsNow()
        writeFileSync(join(home, '.config/opencode/opencode.json'), json)
      },
      op: 'connect',
      agent: 'opencode',
      url: URL_B,
      env,
    })
  })

  it('a re-point that writes one settings.json and puts back another (CLAUDE_CONFIG_DIR set since), within one millisecond: each gets its own bytes back', () => {
    const alt = join(home, 'alt-claude')
    everyCrash({
      setup: () => {
        put('.claude/settings.json', CLAUDE, 0o640)
        put('alt-claude/settings.json', '{ "env": { "ANTHROPIC_API_KEY": "sk-ant-other" } }\n', 0o600)
        originalIsNow()
        connections().connect('claude-code', URL_A)
      },
      op: 'connect',
      agent: 'claude-code',
      url: URL_A,
      env: { CLAUDE_CONFIG_DIR: alt },
      // Every copy it saves is made in the same millisecond (as on a fast disk).
      now: '2026-12-06T12:00:00.000Z',
    })
  })

  it('a symlinked profile (a dotfile manager\'s): the file it points to is written and put back, the link stays', () => {
    everyCrash({
      setup: () => {
        put('dotfiles/zshrc', '# zsh\nalias ll="ls -l"\n', 0o640)
        symlinkSync('dotfiles/zshrc', join(home, '.zshrc'))
        originalIsNow()
      },
      op: 'connect',
      agent: 'sdk',
      url: URL_A,
    })
  })

  it('a chain of symlinks to a profile not made yet (a dotfile manager\'s, before its first sync): the file and its folder go again, the links stay', () => {
    everyCrash({
      setup: () => {
        mkdirSync(join(home, 'links'))
        symlinkSync('../dotfiles/shell/zshrc', join(home, 'links/zshrc'))
        symlinkSync('links/zshrc', join(home, '.zshrc'))
        originalIsNow()
      },
      op: 'connect',
      agent: 'sdk',
      url: URL_A,
    })
  })

  it('a disconnect of a profile that became other than UTF-8 since (a line saved in Latin-1): every other byte kept', () => {
    const latin1 = Buffer.from('# caf\xe9\n', 'latin1')
    everyCrash({
      setup: () => {
        const zshrc = put('.zshrc', '# zsh\nalias ll="ls -l"\n', 0o640)
        connections().connect('sdk', URL_A)
        const connected = readFileSync(zshrc)
        writeFileSync(zshrc, Buffer.concat([Buffer.from('# zsh\nalias ll="ls -l"\n'), latin1]))
        originalIsNow()
        writeFileSync(zshrc, Buffer.concat([connected, latin1]))
      },
      op: 'disconnect',
      agent: 'sdk',
      url: URL_A,
    })
  })

  it('a disconnect', () => {
    everyCrash({
      setup: () => {
        put('.claude/settings.json', CLAUDE, 0o640)
        put('.zshrc', '# zsh\nalias ll="ls -l"\n', 0o600)
        originalIsNow()
        connections().connect('claude-code', URL_A)
      },
      op: 'disconnect',
      agent: 'claude-code',
      url: URL_A,
    })
  })

  it('a disconnect killed while it undoes a connect that was cut off: the next Disconnect still gives back the file', () => {
    const setup = () => {
      rmSync(home, { recursive: true, force: true })
      put('.claude/settings.json', CLAUDE, 0o640)
      originalIsNow()
    }
    setup()
    // Killed right after settings.json was written, before the record: the disconnect has it to undo.
    const k = changesUntil(step('connect', 'claude-code', URL_A, 0), (o) => o.op === 'renameSync' && o.path.startsWith(join(home, '.claude/settings.json')))
    for (let j = 1; ; j++) {
      setup()
      expect(step('connect', 'claude-code', URL_A, k).killed).toBe(true)
      const ran = step('disconnect', 'claude-code', URL_A, j)
      const conn = connections()
      conn.disconnect('claude-code')
      expect(snapshot(), `disconnect killed after change ${j}`).toEqual(original)
      expect(conn.connected()).toEqual([])
      if (!ran.killed) break
    }
  })

  it('a connect killed after its file was written, the file then edited by hand: Disconnect still takes Burnrate out and keeps the edit', () => {
    const settings = put('.claude/settings.json', CLAUDE, 0o640)
    const k = changesUntil(step('connect', 'claude-code', URL_A, 0), (o) => o.op === 'renameSync' && o.path.startsWith(settings))
    rmSync(dataDir, { recursive: true })
    writeFileSync(settings, CLAUDE)
    expect(step('connect', 'claude-code', URL_A, k).killed).toBe(true)
    expect(readFileSync(settings, 'utf8')).toContain('ANTHROPIC_BASE_URL')
    // The user adds a line of their own before Burnrate runs again.
    writeFileSync(settings, readFileSync(settings, 'utf8').replace('"model": "opus",', '"model": "opus",\n    "theme": "dark",'))
    const conn = connections()
    conn.disconnect('claude-code')
    expect(readFileSync(settings, 'utf8')).toBe(CLAUDE.replace('"model": "opus",', '"model": "opus",\n    "theme": "dark",'))
    expect(statSync(settings).mode & 0o777).toBe(0o640)
    expect(conn.connected()).toEqual([])
  })

  it('a re-point killed before its file was written, the file then edited by hand: Disconnect still takes Burnrate out and keeps the edit', () => {
    const settings = put('.claude/settings.json', CLAUDE, 0o640)
    connections().connect('claude-code', URL_A)
    const state = join(dataDir, 'agent-connections.json')
    const journal = changesUntil(step('connect', 'claude-code', URL_B, 0), (o) => o.op === 'renameSync' && o.path.startsWith(state))
    connections().connect('claude-code', URL_A)
    expect(step('connect', 'claude-code', URL_B, journal).killed).toBe(true)
    expect(readFileSync(settings, 'utf8')).toContain(URL_A)
    writeFileSync(settings, readFileSync(settings, 'utf8').replace('"model": "opus",', '"model": "opus",\n    "theme": "dark",'))
    const conn = connections()
    conn.disconnect('claude-code')
    expect(readFileSync(settings, 'utf8')).toBe(CLAUDE.replace('"model": "opus",', '"model": "opus",\n    "theme": "dark",'))
    expect(conn.connected()).toEqual([])
  })

  it('leaves a change that another running Burnrate is making to it, and settles it once that one is gone', async () => {
    put('.claude/settings.json', CLAUDE, 0o640)
    originalIsNow()
    const state = join(dataDir, 'agent-connections.json')
    const journal = changesUntil(step('connect', 'claude-code', URL_A, 0), (o) => o.op === 'renameSync' && o.path.startsWith(state))
    rmSync(dataDir, { recursive: true })
    writeFileSync(join(home, '.claude/settings.json'), CLAUDE)
    expect(step('connect', 'claude-code', URL_A, journal).killed).toBe(true)
    // As if the process that wrote it were still at work.
    const other = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 600000)'], { stdio: 'ignore' })
    try {
      const data = JSON.parse(readFileSync(state, 'utf8'))
      expect(data.pending.agent).toBe('claude-code')
      data.pending.pid = other.pid
      data.pending.proc_start = processStart(other.pid!) ?? undefined
      writeFileSync(state, JSON.stringify(data))
      expect(() => connections().disconnect('claude-code')).toThrow(expect.objectContaining({ code: 'conflict', message: expect.stringContaining(`Another Burnrate (pid ${other.pid})`) }))
      expect(connections().list().find((a) => a.agent === 'claude-code')?.connected).toBe(false)
      expect(JSON.parse(readFileSync(state, 'utf8')).pending).toBeDefined()
    } finally {
      other.kill('SIGKILL')
      await new Promise((r) => other.once('exit', r))
    }
    connections().disconnect('claude-code')
    expect(snapshot()).toEqual(original)
    expect(JSON.parse(readFileSync(state, 'utf8')).pending).toBeUndefined()
  })

  it('a connect of another agent made while one is under way in another process: neither record is lost', async () => {
    put('.claude/settings.json', CLAUDE, 0o640)
    put('.codex/config.toml', 'model = "o3"\n', 0o600)
    originalIsNow()
    // The CLI's connect, stopped at its first change to the disk (it has read the records).
    const cli = spawn(process.execPath, [bundled(), home, dataDir, 'connect', 'claude-code', URL_A, '-1', JSON.stringify(ENV)], { stdio: ['ignore', 'pipe', 'pipe'] })
    const exited = new Promise<number | null>((r) => cli.once('exit', (code) => r(code)))
    await new Promise<void>((r) => cli.stderr.on('data', (d: Buffer) => d.toString().includes('stopped') && r()))
    // The desktop app connects Codex meanwhile: refused while the other is at work, or recorded.
    let refused = false
    try {
      connections().connect('codex', URL_A)
    } catch (err) {
      expect(err).toMatchObject({ code: 'conflict' })
      refused = true
    }
    cli.kill('SIGCONT')
    expect(await exited).toBe(0)
    const conn = connections()
    expect(conn.connected().map((c) => c.agent).sort()).toEqual(refused ? ['claude-code'] : ['claude-code', 'codex'])
    // Whatever points at Burnrate, Disconnect puts back.
    conn.disconnect('claude-code')
    conn.disconnect('codex')
    expect(snapshot()).toEqual(original)
  })

  it('each file is synced before it is renamed into place, and its folder after', () => {
    put('.claude/settings.json', CLAUDE, 0o640)
    const ran = step('connect', 'claude-code', URL_A, 0)
    const renames = ran.ops.flatMap((o, i) => (o.op === 'renameSync' ? [i] : []))
    expect(renames.length).toBeGreaterThan(0)
    for (const i of renames) {
      const from = ran.ops[i].path
      const lastWrite = ran.ops.findLastIndex((o, j) => j < i && o.path === from && (o.op === 'writeSync' || o.op === 'writeFileSync'))
      const synced = ran.ops.findIndex((o, j) => j > lastWrite && j < i && o.op === 'fsyncSync' && o.path === from)
      expect(synced, `${from} synced before its rename`).toBeGreaterThan(-1)
      const next = ran.ops.findIndex((o, j) => j > i && o.op !== 'fsyncSync' && o.op !== 'openSync' && o.op !== 'closeSync')
      const dirSynced = ran.ops.findIndex((o, j) => j > i && (next === -1 || j < next) && o.op === 'fsyncSync' && o.path === dirname(from))
      expect(dirSynced, `${dirname(from)} synced after ${from} was renamed`).toBeGreaterThan(-1)
    }
  })

})
