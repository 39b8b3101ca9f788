import type { ChildProcess } from 'node:child_process'

/**
 * The URL a spawned Burnrate prints once it listens ("listening on http://…", on stdout or
 * stderr), and everything it has printed so far; rejects with that output if it exits first.
 */
export function listeningUrl(child: ChildProcess): { url: Promise<string>; output: () => string } {
  let out = ''
  const url = new Promise<string>((resolve, reject) => {
    const on = (d: Buffer) => {
      out += d
      const m = /listening on (http:\/\/\S+)/.exec(out)
      if (m) resolve(m[1])
    }
    child.stdout?.on('data', on)
    child.stderr?.on('data', on)
    child.once('exit', () => reject(new Error(`exited before listening:\n${out}`)))
  })
  return { url, output: () => out }
}

/** What a spawned Burnrate came to: the URL it printed once it listens, or its exit code if it exits first; with what it printed by then. */
export function listenedOrExited(child: ChildProcess): Promise<{ listening?: string; exit?: number | null; output: string }> {
  let output = ''
  return new Promise((resolve) => {
    const on = (d: Buffer) => {
      output += d
      const m = /listening on (http:\/\/\S+)/.exec(output)
      if (m) resolve({ listening: m[1], output })
    }
    child.stdout!.on('data', on)
    child.stderr!.on('data', on)
    child.once('exit', (code) => resolve({ exit: code, output }))
  })
}

/** Kills (SIGKILL) the children still running, waits for each to exit, and forgets them all. */
export async function killAndWait(children: ChildProcess[]): Promise<void> {
  for (const c of children.splice(0)) {
    if (c.exitCode !== null || c.signalCode !== null) continue
    const gone = new Promise((r) => c.once('exit', r))
    c.kill('SIGKILL')
    await gone
  }
}
