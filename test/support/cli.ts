import { runCli } from '../../src/main/cli/program'

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
