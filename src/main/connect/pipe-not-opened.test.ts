import { type ChildProcess, execFile, execFileSync, spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { AgentConnections } from './connections'
import { bundleChild } from '../../../test/faults/connect-child'
import { STATE_FILE } from './state'

/**
 * A secrets manager's mounted .env (1Password's) is a named pipe whose writer waits for a reader:
 * each open of its reading end is a read it delivers the secrets to, after asking the user to
 * authorize it. Burnrate, which lists the agents for the tray menu and the dashboard, opened the
 * pipe (without waiting) only to find it is not a regular file, and closed it: the writer was let
 * go for a read nobody made, its delivery lost in a pipe Burnrate no longer held. Such a file is
 * now looked at before it is opened, and not opened. The writer here numbers its deliveries: the
 * agent's read gets the first.
 */
const WRITER = 'trap "" PIPE; n=0; while :; do n=$((n+1)); exec 3>"$1"; echo "delivery $n" >&3 2>/dev/null; exec 3>&-; done'

let home: string
let writer: ChildProcess | null = null
beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'burnrate-pipe-not-opened-'))
  mkdirSync(join(home, '.gemini'))
  execFileSync('mkfifo', [join(home, '.gemini', '.env')])
})
afterEach(() => {
  if (writer?.pid !== undefined && writer.exitCode === null) process.kill(writer.pid, 'SIGKILL')
  writer = null
  rmSync(home, { recursive: true, force: true })
})

/** Where the process waits in the kernel (Linux: a writer opening a pipe nothing reads waits in wait_for_partner). */
const waitsIn = (pid: number): string => readFileSync(`/proc/${pid}/wchan`, 'utf8')

describe.skipIf(process.platform !== 'linux')("an agent's env file that is a named pipe a secrets manager writes into", () => {
  it('is not opened by the agent list or a connect: the agent reading it gets the first delivery', async () => {
    const pipe = join(home, '.gemini', '.env')
    writer = spawn('sh', ['-c', WRITER, 'writer', pipe], { stdio: 'ignore' })
    const pid = writer.pid!
    // The writer waiting for a reader, as the secrets manager does.
    await vi.waitFor(() => expect(waitsIn(pid)).toBe('wait_for_partner'), { timeout: 30_000, interval: 20 })

    const conn = new AgentConnections({ home, env: { PATH: '' }, platform: 'linux', dataDir: join(home, 'data') })
    const gemini = conn.list().find((a) => a.agent === 'gemini-cli')!
    expect(gemini.error).toContain('it is not a regular file')
    expect(() => conn.connect('gemini-cli', 'http://127.0.0.1:8787')).toThrow(/not a regular file/)

    // The agent reads it.
    const { stdout } = await promisify(execFile)('head', ['-n', '1', pipe])
    expect(stdout).toBe('delivery 1\n')
  })

  it('is not opened either when a connect cut off by a crash is settled (the agent list settles it first)', async () => {
    // A connect of Gemini CLI killed once its pending change is recorded, before .env was written.
    const bundle = mkdtempSync(join(tmpdir(), 'burnrate-pipe-step-'))
    try {
      const child = await bundleChild('connect-step', bundle)
      const dataDir = join(home, 'data')
      const pipe = join(home, '.gemini', '.env')
      rmSync(pipe)
      const pending = (): boolean => existsSync(join(dataDir, STATE_FILE)) && JSON.parse(readFileSync(join(dataDir, STATE_FILE), 'utf8')).pending !== undefined
      for (let k = 1; !pending(); k++) {
        const r = spawnSync(process.execPath, [child, home, dataDir, 'connect', 'gemini-cli', 'http://127.0.0.1:8787', String(k), JSON.stringify({ PATH: '' })], { encoding: 'utf8' })
        expect(r.signal, `the connect ran to its end before its pending change was recorded: ${r.stderr}`).toBe('SIGKILL')
      }
      expect(existsSync(pipe)).toBe(false)
      // The user's secrets manager mounts .env since.
      execFileSync('mkfifo', [pipe])
      writer = spawn('sh', ['-c', WRITER, 'writer', pipe], { stdio: 'ignore' })
      const pid = writer.pid!
      await vi.waitFor(() => expect(waitsIn(pid)).toBe('wait_for_partner'), { timeout: 30_000, interval: 20 })

      const conn = new AgentConnections({ home, env: { PATH: '' }, platform: 'linux', dataDir })
      expect(conn.list().find((a) => a.agent === 'gemini-cli')!.error).toContain('it is not a regular file')
      expect(() => conn.connect('gemini-cli', 'http://127.0.0.1:8787')).toThrow(/not a regular file/)
      // Left to settle once it can be read.
      expect(pending()).toBe(true)

      const { stdout } = await promisify(execFile)('head', ['-n', '1', pipe])
      expect(stdout).toBe('delivery 1\n')
    } finally {
      rmSync(bundle, { recursive: true, force: true })
    }
  })
})
