import { statSync } from 'node:fs'
import { defaultDataDir } from '../config/paths'
import { untrustedReason } from './owned-file'

/** The data folder, as `/api/health`'s `data_dir` section shows it (never its path: health needs no token). */
export type DataFolderState = { shared: false } | { shared: true; reason: string; mode: string; owner_uid: number }

/**
 * Whether other users may write the data folder, by the rule every file read from it passes
 * (./owned-file.ts): another user's folder, or one anyone may write. Checked after the database
 * is opened, which makes a folder of the user's own 0700: what is left is a folder that is not
 * theirs, or a filesystem without Unix owners and modes (exFAT/FAT, WSL's /mnt/c, CIFS mounted
 * 0777), where every file looks writable by anyone. A folder that cannot be read: not shared.
 */
export function dataFolderState(dir: string): DataFolderState {
  try {
    const reason = untrustedReason(dir)
    if (reason === null) return { shared: false }
    const st = statSync(dir)
    return { shared: true, reason, mode: `0${(st.mode & 0o777).toString(8).padStart(3, '0')}`, owner_uid: st.uid }
  } catch {
    return { shared: false }
  }
}

/**
 * The one start-up warning for a shared data folder: which, why, what Burnrate will therefore
 * not trust in it (each refused where it is read, with consequences that are not obvious there),
 * and the fix.
 */
export function sharedFolderWarning(dir: string, state: Extract<DataFolderState, { shared: true }>, defaultDir = defaultDataDir()): string {
  const me = typeof process.getuid === 'function' ? `; you are uid ${process.getuid()}` : ''
  const suggestion = defaultDir === dir ? '' : `, such as the default ${defaultDir}`
  return (
    `the data folder ${dir} is shared with other users: ${state.reason} (mode ${state.mode}, owner uid ${state.owner_uid}${me}). ` +
    'Burnrate therefore trusts no file in it that it cannot prove it wrote itself; on a filesystem without Unix owners and modes ' +
    "(exFAT/FAT, WSL's /mnt/c, CIFS, a Docker Desktop mount of a Windows folder) that is every file, its own included: " +
    'a config.yaml there stops start-up (name one with --config), server.lock names no server (the CLI does not find this one), ' +
    'agent-connections.json and agent-backups/ are not read (connect and disconnect stop), ' +
    'ledger-spill-*.jsonl files are not recorded (calls kept there while the database could not be written stay out of the ledger until the folder is moved to a private one), ' +
    'prices.json is not used (the bundled prices are). The ledger itself is used as before. ' +
    `Fix: use a folder of your own with mode 0700${suggestion}, with --data-dir, BURNRATE_DATA_DIR or data_dir in config.yaml.`
  )
}
