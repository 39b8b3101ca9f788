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
