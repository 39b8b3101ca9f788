import { type ExecFileOptions, execFile, spawn } from 'node:child_process'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { runCli } from '../../src/main/cli/program'
import { DB_FILE } from '../../src/main/config/paths'
import { openDatabase } from '../../src/main/ledger/db'

/**
 * `dir` (made if missing) with an empty ledger in it, as `burnrate import` leaves one: `status`,
 * `report` and `export` refuse a data folder named that holds none. Returns `dir`.
 */
export function startLedger(dir: string): string {
  mkdirSync(dir, { recursive: true })
  openDatabase(join(dir, DB_FILE)).close()
  return dir
}

/** Runs the `burnrate` command in this process; its exit code and what it wrote (stdout and stderr together). */
export async function runCliCaptured(...args: string[]): Promise<{ code: number; out: string }> {
  let out = ''
  const stdout = process.stdout.write
  const stderr = process.stderr.write
  process.stdout.write = ((s: string) => ((out += s), true)) as typeof process.stdout.write
  process.stderr.write = ((s: string) => ((out += s), true)) as typeof process.stderr.write
  try {
    return { code: await runCli(args), out }
  } finally {
    process.stdout.write = stdout
    process.stderr.write = stderr
  }
}

/**
 * `node <cli> <args> | head -1` as a shell runs it: the CLI's stdout is a pipe read by a real
 * `head -1`, which exits after its first line while the CLI may still be writing (this process
 * keeps no copy of the pipe's read end). The CLI's exit status or signal, its stderr, and the line.
 */
export function pipedIntoHead(
  cli: string,
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ status: number | null; signal: NodeJS.Signals | null; stderr: string; line: string }> {
  const child = spawn(process.execPath, [cli, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] })
  const head = spawn('head', ['-1'], { stdio: [child.stdout!, 'pipe', 'inherit'] })
  child.stdout!.destroy()
  let stderr = ''
  let line = ''
  child.stderr!.on('data', (d: Buffer) => (stderr += d))
  head.stdout!.on('data', (d: Buffer) => (line += d))
  const headDone = new Promise<void>((r) => head.once('close', () => r()))
  return new Promise((resolve) => child.once('close', (status, signal) => void headDone.then(() => resolve({ status, signal, stderr, line: line.trim() }))))
}

/**
 * Runs the built `burnrate` (`cli`, out/main/cli.js) as a child process, as a user's shell does:
 * its exit code (null when it was killed, e.g. by `timeout`), stdout and stderr.
 */
export function execCli(
  cli: string,
  args: string[],
  opts: ExecFileOptions & { closeStdin?: boolean } = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const { closeStdin, ...options } = opts
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [cli, ...args], { ...options, encoding: 'utf8' }, (_err, stdout, stderr) => resolve({ code: child.exitCode, stdout, stderr }))
    if (closeStdin) child.stdin?.end()
  })
}
