import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it, vi } from 'vitest'
import { stringify } from 'yaml'
import { autostartEntry } from '../../src/main/desktop-logic/autostart'
import { silentLogger } from '../../src/main/log'
import { appEachTest } from './app-each-test'
import { state } from './fake-electron'

vi.mock('electron', () => import('./fake-electron'))

const { runDesktop } = await import('../../src/main/desktop/app')

const t = appEachTest('burnrate-autostart-moved-')

/**
 * Start at login on Linux is a desktop entry naming the app's file. An AppImage's update
 * (electron-updater) deletes the old file and puts the new one beside it under the new version's
 * name (Burnrate-0.1.0.AppImage → Burnrate-0.2.0.AppImage): the entry named a file that is gone,
 * so the app no longer started at login, while the menu still showed "Start at login" checked.
 */
describe('Start at login after the AppImage was updated or moved', () => {
  async function launch(appImage: string) {
    writeFileSync(join(t.dir, 'config.yaml'), stringify({ server: { host: '127.0.0.1', port: 0 }, timezone: 'UTC' }))
    const d = await runDesktop({
      argv: ['burnrate', '--hidden'],
      env: { XDG_CONFIG_HOME: join(t.dir, 'xdg'), APPIMAGE: appImage },
      platform: 'linux',
      log: silentLogger,
      signals: false,
      home: join(t.dir, 'home'),
    })
    if (!d) throw new Error(`desktop did not start: ${JSON.stringify(state.errorBoxes)}`)
    return d
  }

  it('points the entry at the app now running when the file it named is gone', async () => {
    const apps = join(t.dir, 'Apps')
    mkdirSync(apps)
    const entry = join(t.dir, 'xdg', 'autostart', 'burnrate.desktop')
    mkdirSync(join(t.dir, 'xdg', 'autostart'), { recursive: true })
    // Written by 0.1.0; its file since replaced by the update.
    writeFileSync(entry, autostartEntry(join(apps, 'Burnrate-0.1.0.AppImage'), []))
    const now = join(apps, 'Burnrate-0.2.0.AppImage')
    writeFileSync(now, '')
    await launch(now)
    expect(readFileSync(entry, 'utf8')).toContain(`Exec="${now}" `)
    expect(readFileSync(entry, 'utf8')).toContain('--hidden')
  })

  it('leaves an entry naming a file that is still there (another copy of the app)', async () => {
    const apps = join(t.dir, 'Apps')
    mkdirSync(apps)
    const other = join(apps, 'Burnrate-stable.AppImage')
    writeFileSync(other, '')
    const entry = join(t.dir, 'xdg', 'autostart', 'burnrate.desktop')
    mkdirSync(join(t.dir, 'xdg', 'autostart'), { recursive: true })
    const text = autostartEntry(other, [])
    writeFileSync(entry, text)
    const now = join(apps, 'Burnrate-dev.AppImage')
    writeFileSync(now, '')
    await launch(now)
    expect(readFileSync(entry, 'utf8')).toBe(text)
  })

  it("rewrites the entry an earlier build wrote for a path with a percent sign, which launched nothing", async () => {
    const apps = join(t.dir, 'My%20Apps')
    mkdirSync(apps)
    const now = join(apps, 'Burnrate-0.2.0.AppImage')
    writeFileSync(now, '')
    const entry = join(t.dir, 'xdg', 'autostart', 'burnrate.desktop')
    mkdirSync(join(t.dir, 'xdg', 'autostart'), { recursive: true })
    // As builds before this one wrote it (the % as is), for this app as it runs in the test (its folder after the AppImage).
    writeFileSync(entry, `[Desktop Entry]\nType=Application\nName=Burnrate\nExec="${now}" "${process.cwd()}" --hidden\nX-GNOME-Autostart-enabled=true\n`)
    await launch(now)
    expect(readFileSync(entry, 'utf8')).toBe(autostartEntry(now, [process.cwd()]))
  })

  it('writes no entry when Start at login is off', async () => {
    const now = join(t.dir, 'Burnrate-0.2.0.AppImage')
    writeFileSync(now, '')
    await launch(now)
    expect(existsSync(join(t.dir, 'xdg', 'autostart', 'burnrate.desktop'))).toBe(false)
  })
})
