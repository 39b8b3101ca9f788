import { execFileSync } from 'node:child_process'
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { eventually } from '../../../test/support/http'
import { autostartEntry, autostartFile, autostartProgram, isAutostartEnabled, setAutostart, startsHidden } from './autostart'

const dirs: string[] = []
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})

describe('startsHidden', () => {
  it('hides the window for a login launch only', () => {
    expect(startsHidden(['/opt/Burnrate/burnrate'])).toBe(false)
    expect(startsHidden(['/opt/Burnrate/burnrate', '--hidden'])).toBe(true)
    expect(startsHidden(['/Applications/Burnrate.app/Contents/MacOS/Burnrate'], true)).toBe(true)
  })
})

describe('Linux autostart entry', () => {
  it('lives in XDG_CONFIG_HOME/autostart, else ~/.config/autostart', () => {
    expect(autostartFile({ XDG_CONFIG_HOME: '/x/cfg' }, '/home/u')).toBe('/x/cfg/autostart/burnrate.desktop')
    expect(autostartFile({}, '/home/u')).toBe('/home/u/.config/autostart/burnrate.desktop')
  })

  it('launches the app hidden, with the path quoted by the spec', () => {
    const text = autostartEntry('/home/u/Apps/Burn "rate" $1.AppImage')
    expect(text).toContain('Exec="/home/u/Apps/Burn \\"rate\\" \\$1.AppImage" --hidden\n')
    expect(text.startsWith('[Desktop Entry]\nType=Application\n')).toBe(true)
    expect(autostartEntry('/usr/lib/electron', ['/src/burnrate'])).toContain('Exec="/usr/lib/electron" "/src/burnrate" --hidden\n')
  })

  it('writes a percent sign in the path as the spec says (%%): a lone one is a field code', () => {
    expect(autostartEntry('/home/u/My%20Apps/Burnrate.AppImage')).toContain('"/home/u/My%%20Apps/Burnrate.AppImage" --hidden\n')
  })

  it.skipIf(!hasGio())('is launched by GLib (gio launch, as GNOME starts it at login) from a folder with spaces, quotes, $ and %', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'burnrate-autostart-'))
    dirs.push(dir)
    const folder = join(dir, 'My Apps "x" $HOME 100%d %20')
    mkdirSync(folder)
    const marker = join(dir, 'launched.txt')
    const program = join(folder, 'burnrate')
    writeFileSync(program, `#!/bin/sh\nprintf '%s\\n' "$0" "$@" > '${marker}'\n`)
    chmodSync(program, 0o755)
    const entry = join(dir, 'burnrate.desktop')
    writeFileSync(entry, autostartEntry(program))
    execFileSync('gio', ['launch', entry], { stdio: 'ignore', timeout: 10_000 })
    await eventually(() => existsSync(marker) && readFileSync(marker, 'utf8').endsWith('\n'))
    expect(readFileSync(marker, 'utf8')).toBe(`${program}\n--hidden\n`)
  })

  it('reads back the program an entry it wrote starts, however its path is quoted', () => {
    for (const p of ['/opt/Burnrate/burnrate', '/home/u/My Apps/Burn "rate" $1 `x` \\z.AppImage', '/home/u/My%20Apps/100%d.AppImage']) {
      expect(autostartProgram(autostartEntry(p))).toBe(p)
      expect(autostartProgram(autostartEntry(p, ['/src/burnrate']))).toBe(p)
    }
    expect(autostartProgram('[Desktop Entry]\nExec=/usr/bin/burnrate --hidden\n')).toBe('/usr/bin/burnrate')
    expect(autostartProgram('[Desktop Entry]\nName=x\n')).toBeNull()
  })

  it('is turned on and off by writing and removing the file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'burnrate-autostart-'))
    dirs.push(dir)
    const file = autostartFile({ XDG_CONFIG_HOME: dir })
    expect(isAutostartEnabled(file)).toBe(false)
    setAutostart(file, true, '/opt/Burnrate/burnrate')
    expect(isAutostartEnabled(file)).toBe(true)
    expect(readFileSync(file, 'utf8')).toContain('Exec="/opt/Burnrate/burnrate" --hidden')
    setAutostart(file, false, '/opt/Burnrate/burnrate')
    expect(existsSync(file)).toBe(false)
    setAutostart(file, false, '/opt/Burnrate/burnrate')
  })

  it('respects an entry the desktop environment switched off', () => {
    const dir = mkdtempSync(join(tmpdir(), 'burnrate-autostart-'))
    dirs.push(dir)
    const file = join(dir, 'burnrate.desktop')
    writeFileSync(file, autostartEntry('/opt/b').replace('X-GNOME-Autostart-enabled=true', 'X-GNOME-Autostart-enabled=false'))
    expect(isAutostartEnabled(file)).toBe(false)
    writeFileSync(file, autostartEntry('/opt/b') + 'Hidden=true\n')
    expect(isAutostartEnabled(file)).toBe(false)
  })
})

function hasGio(): boolean {
  if (process.platform !== 'linux') return false
  try {
    execFileSync('gio', ['version'], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}
