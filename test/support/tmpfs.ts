import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** A real small filesystem, when this machine lets us mount one (root in CI); null otherwise. */
export function mountTmpfs(sizeKb: number): string | null {
  if (process.platform !== 'linux' || process.getuid?.() !== 0) return null
  const dir = mkdtempSync(join(tmpdir(), 'burnrate-tmpfs-'))
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeKb}k`, 'tmpfs', dir], { stdio: 'ignore' })
    return dir
  } catch {
    rmSync(dir, { recursive: true, force: true })
    return null
  }
}

export function unmount(dir: string): void {
  try {
    execFileSync('umount', ['-l', dir], { stdio: 'ignore' })
  } catch {}
  rmSync(dir, { recursive: true, force: true })
}

/** Whether this machine lets the tests mount a tmpfs. */
export const canMount = (() => {
  const d = mountTmpfs(64)
  if (!d) return false
  unmount(d)
  return true
})()

/** Fills every byte of the filesystem at `file`'s folder, then frees `leaveBytes` of it; returns the 4 KiB blocks written. */
export function fillDisk(file: string, leaveBytes = 0): number {
  const block = Buffer.alloc(4096, 1)
  let written = 0
  for (;;) {
    try {
      writeFileSync(file, block, { flag: 'a' })
      written++
    } catch {
      break
    }
  }
  if (leaveBytes > 0) truncateSync(file, Math.max(0, statSync(file).size - leaveBytes))
  return written
}
