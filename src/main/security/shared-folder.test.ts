import { chmodSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, expect, it } from 'vitest'
import { dataFolderState, sharedFolderWarning } from './shared-folder'

// A world-writable folder of the user's own, as a filesystem without modes shows every folder
// (the server's own start makes such a folder 0700 where it can: test/security/shared-data-folder.test.ts).
let dirs: string[] = []
afterEach(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
  dirs = []
})
const folder = (mode: number): string => {
  const d = mkdtempSync(join(tmpdir(), 'burnrate-shared-folder-'))
  dirs.push(d)
  chmodSync(d, mode)
  return d
}

it.runIf(process.platform !== 'win32')('a folder anyone may write is shared, and the warning says so with its mode, the fix and no default that is the folder itself', () => {
  const dir = folder(0o777)
  const state = dataFolderState(dir)
  expect(state).toEqual({ shared: true, reason: 'any user may write it', mode: '0777', owner_uid: process.getuid!() })
  if (!state.shared) return
  const w = sharedFolderWarning(dir, state, '/home/u/.config/Burnrate')
  expect(w).toContain(`the data folder ${dir} is shared with other users: any user may write it (mode 0777, owner uid ${process.getuid!()}; you are uid ${process.getuid!()})`)
  expect(w).toContain('mode 0700, such as the default /home/u/.config/Burnrate, with --data-dir, BURNRATE_DATA_DIR or data_dir')
  expect(sharedFolderWarning(dir, state, dir)).toContain('mode 0700, with --data-dir')
  expect(w).not.toContain('\n')
})

it('a private folder, a group-writable one and one that is gone are not shared', () => {
  expect(dataFolderState(folder(0o700))).toEqual({ shared: false })
  expect(dataFolderState(folder(0o770))).toEqual({ shared: false })
  expect(dataFolderState(join(tmpdir(), 'burnrate-no-such-folder-4f1c'))).toEqual({ shared: false })
})
