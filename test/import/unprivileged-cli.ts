import { spawnSync } from 'node:child_process'
import { chmodSync, existsSync, readdirSync, statSync } from 'node:fs'
import { join, resolve } from 'node:path'

/**
 * The built CLI run as a user who cannot read what a file's mode forbids, for the tests of logs
 * the user cannot read (one `sudo` left owned by root). Root reads everything, so as root it runs
 * through setpriv without the capabilities that let root read what it may not (still root: a clone
 * in a folder only root may enter, as CI's temporary folders are, stays reachable; as `nobody` it
 * was not).
 */
const CLI = resolve(__dirname, '../../out/main/cli.js')
const root = process.getuid?.() === 0
const runner = root ? '/usr/bin/setpriv' : process.execPath
const NO_READ_ALL = '-dac_override,-dac_read_search'
const prefix = root ? [`--inh-caps=${NO_READ_ALL}`, `--bounding-set=${NO_READ_ALL}`, process.execPath] : []

/** True where such a user cannot be had (root without setpriv): the tests are skipped. */
export const cannotDropRead = root && !existsSync('/usr/bin/setpriv')

/** Runs the built CLI so, with HOME `home` and `env` on top. */
export function unprivilegedCli(home: string, args: string[], env: Record<string, string> = {}) {
  const r = spawnSync(runner, [...prefix, CLI, ...args], { encoding: 'utf8', env: { PATH: process.env.PATH, HOME: home, NO_COLOR: '1', ...env }, timeout: 60_000 })
  return { code: r.status, stdout: r.stdout, stderr: r.stderr }
}

/** Every folder and file below `p` readable by all (a copied fixture, before one of them is made unreadable). */
export function openAll(p: string): void {
  chmodSync(p, statSync(p).isDirectory() ? 0o755 : 0o644)
  if (statSync(p).isDirectory()) for (const n of readdirSync(p)) openAll(join(p, n))
}
