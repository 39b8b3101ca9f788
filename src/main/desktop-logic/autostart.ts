import { existsSync, readFileSync, rmSync } from 'node:fs'
import { homedir } from 'node:os'
import { isAbsolute, join } from 'node:path'
import { writeTextFile } from './json-file'

/** The argument a login launch carries, so the app starts in the tray without a window. */
export const HIDDEN_FLAG = '--hidden'

/** Whether this launch should keep the window hidden (started at login). */
export function startsHidden(argv: readonly string[], openedAtLogin = false): boolean {
  return openedAtLogin || argv.includes(HIDDEN_FLAG)
}

/**
 * Linux has no login-item API in Electron: the XDG autostart spec's desktop entry in
 * `$XDG_CONFIG_HOME/autostart` does it for every desktop that follows it (GNOME, KDE, Xfce, ...).
 */
export function autostartFile(env: NodeJS.ProcessEnv = process.env, home: string = homedir()): string {
  return join(env.XDG_CONFIG_HOME || join(home, '.config'), 'autostart', 'burnrate.desktop')
}

/**
 * Quotes an argument for a desktop entry's Exec key (the spec's rules for double quotes), and
 * writes a percent sign as `%%`: a lone one starts a field code (`%20` in `My%20Apps`, `%d`),
 * which the launcher expands or drops.
 */
function quoteExec(arg: string): string {
  return `"${arg.replace(/(["`$\\])/g, '\\$1').replaceAll('%', '%%')}"`
}

/** The shell line that runs its arguments, for a program whose path has a percent sign (see autostartEntry). */
const RUN_ARGS = ['/bin/sh', '-c', 'exec "$0" "$@"']

/**
 * `args` go before the hidden flag (in development: the app folder Electron is to run). A path
 * with a percent sign (`My%20Apps`) is started through /bin/sh: GLib (GNOME's autostart) looks
 * for the Exec's program before it expands `%%`, so it found no `My%%20Apps` and launched nothing.
 */
export function autostartEntry(executable: string, args: readonly string[] = []): string {
  const argv = [executable, ...args]
  const exec = argv.some((a) => a.includes('%')) ? [...RUN_ARGS, ...argv] : argv
  return [
    '[Desktop Entry]',
    'Type=Application',
    'Name=Burnrate',
    'Comment=Meters every AI agent call: tokens, dollars, budgets',
    `Exec=${exec.map(quoteExec).join(' ')} ${HIDDEN_FLAG}`,
    'Terminal=false',
    'X-GNOME-Autostart-enabled=true',
    '',
  ].join('\n')
}

export function isAutostartEnabled(file: string): boolean {
  try {
    const text = readFileSync(file, 'utf8')
    return !/^Hidden\s*=\s*true\s*$/m.test(text) && !/^X-GNOME-Autostart-enabled\s*=\s*false\s*$/m.test(text)
  } catch {
    return false
  }
}

/** The words of a desktop entry's Exec line as autostartEntry writes them (its quoting undone), or null without one. */
export function execArgs(text: string): string[] | null {
  const line = /^Exec=(.*)$/m.exec(text)?.[1]
  if (line === undefined) return null
  const words: string[] = []
  const re = /"((?:[^"\\]|\\.)*)"|(\S+)/g
  for (let m = re.exec(line); m; m = re.exec(line)) {
    const word = m[1] !== undefined ? m[1].replace(/\\(.)/g, '$1') : m[2]
    words.push(word.replaceAll('%%', '%'))
  }
  return words
}

/** The program an entry starts: its first word, or the one /bin/sh runs (a path with a percent sign). */
export function autostartProgram(text: string): string | null {
  const words = execArgs(text)
  if (!words?.length) return null
  return RUN_ARGS.every((w, i) => words[i] === w) ? (words[RUN_ARGS.length] ?? null) : words[0]
}

/**
 * An entry that is on but names a program that is gone is pointed at `executable`: an AppImage's
 * update (electron-updater) deletes the old file and writes the new version's beside it under its
 * own name (Burnrate-0.1.0.AppImage, then Burnrate-0.2.0.AppImage), and a person may move the
 * file; the entry then started nothing at login while the menu showed Start at login on. An entry
 * naming a file still there (another copy of the app) is left as it is; one naming this app is
 * rewritten when an earlier build wrote its Exec otherwise. True when it was rewritten.
 */
export function repointAutostart(file: string, executable: string, args: readonly string[] = []): boolean {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch {
    return false
  }
  if (!isAutostartEnabled(file)) return false
  const program = autostartProgram(text)
  const entry = autostartEntry(executable, args)
  // This app's own entry, written by an earlier build: its Exec as this build writes it (a path
  // with a percent sign, written as is before, launched nothing).
  const exec = (t: string) => /^Exec=.*$/m.exec(t)?.[0]
  if (program === executable && exec(text) === exec(entry)) return false
  if (program !== executable && (program === null || !isAbsolute(program) || existsSync(program))) return false
  writeTextFile(file, entry)
  return true
}

/** `executable`: the AppImage when run from one (`$APPIMAGE`), else the installed binary. */
export function setAutostart(file: string, enabled: boolean, executable: string, args: readonly string[] = []): void {
  if (enabled) writeTextFile(file, autostartEntry(executable, args))
  else if (existsSync(file)) rmSync(file)
}
