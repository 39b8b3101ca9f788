import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { build } from 'esbuild'
import { afterAll, beforeAll, expect, vi } from 'vitest'

/** The connect tests' children in ./scripts, run with process.execPath once bundled. */
export type ConnectScript = 'connect-step' | 'connect-stop-at'

/** ./scripts/<script>.ts bundled into `dir` (with what it imports from src): the path of the script to run. */
export async function bundleChild(script: ConnectScript, dir: string): Promise<string> {
  const outfile = join(dir, `${script}.mjs`)
  await build({
    entryPoints: [resolve(__dirname, 'scripts', `${script}.ts`)],
    bundle: true,
    platform: 'node',
    format: 'esm',
    outfile,
    logLevel: 'silent',
    mainFields: ['module', 'main'],
    banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
  })
  return outfile
}

/** `script` bundled once for the test file (beforeAll) into a folder named from `prefix`, removed after (afterAll): its path, once bundled. */
export function bundledChild(script: ConnectScript, prefix: string): () => string {
  let dir = ''
  let child = ''
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), prefix))
    child = await bundleChild(script, dir)
  })
  afterAll(() => rmSync(dir, { recursive: true, force: true }))
  return () => child
}

export interface Stopped {
  proc: ChildProcess
  /** Its exit code, and all it said on stderr (its end read). */
  exited: Promise<{ code: number | null; stderr: string }>
  /** What it has said on stderr so far. */
  said: () => string
}

/**
 * The connect-stop-at child (`child`, its path) run with `args` (home dataDir agent url stopAtJson
 * envJson) and pushed onto `children` for the test to kill, once stopped where `stopAt` says
 * (waited for: it said "stopped" and its state in /proc is T). `node`: options for node before the
 * child (--import a preload); `env`: variables added to this process's.
 */
export async function connectStopped(child: string, args: string[], children: ChildProcess[], opts: { node?: string[]; env?: NodeJS.ProcessEnv } = {}): Promise<Stopped> {
  const proc = spawn(process.execPath, [...(opts.node ?? []), child, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...opts.env } })
  children.push(proc)
  let stderr = ''
  proc.stderr!.on('data', (d: Buffer) => (stderr += d.toString()))
  const ended = new Promise<void>((r) => proc.stderr!.once('end', () => r()))
  const exited = new Promise<number | null>((r) => proc.once('exit', (code) => r(code))).then(async (code) => {
    await ended
    return { code, stderr }
  })
  const stopped: Stopped = { proc, exited, said: () => stderr }
  if ((await stoppedAgain(stopped, 1)) === 'exited') throw new Error(`exited before stopping: ${stderr}`)
  return stopped
}

/**
 * Waits for a connect-stop-at child let go on (SIGCONT) to stop for the `n`th time (it said
 * "stopped" `n` times and its state in /proc is T), or to exit: which it did.
 */
export async function stoppedAgain(child: Stopped, n: number): Promise<'stopped' | 'exited'> {
  const { proc } = child
  return vi.waitFor(
    () => {
      if (proc.exitCode !== null || proc.signalCode !== null) return 'exited' as const
      expect(child.said().split('stopped\n').length - 1).toBeGreaterThanOrEqual(n)
      expect(readFileSync(`/proc/${proc.pid}/stat`, 'utf8').replace(/^.*\) /s, '')[0]).toBe('T')
      return 'stopped' as const
    },
    { timeout: 60_000, interval: 20 },
  )
}

/** Kills (SIGKILL) the children still running, and forgets them all. */
export function killChildren(children: ChildProcess[]): void {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL')
}
