import { readFileSync } from 'node:fs'
import { describe, expect, it, vi } from 'vitest'
import { APP_NAME, defaultDataDir } from '../../src/main/config/paths'
import { APP_ID } from '../../src/main/desktop/app'

vi.mock('electron', () => import('./fake-electron'))

const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'))
const builder = readFileSync(new URL('../../electron-builder.yml', import.meta.url), 'utf8')

/**
 * The headless server and the desktop app share one ledger only if Electron's userData
 * (appData + the app's name, which Electron takes from package.json's productName) is the
 * folder `defaultDataDir()` computes.
 */
describe('the desktop and the headless server agree on the data folder', () => {
  it('productName is the name both use', () => {
    expect(pkg.productName).toBe(APP_NAME)
    expect(builder).toMatch(new RegExp(`^productName: ${APP_NAME}$`, 'm'))
    expect(builder).toMatch(new RegExp(`^appId: ${APP_ID.replace(/\./g, '\\.')}$`, 'm'))
  })
  it("is Electron's userData on each OS", () => {
    expect(defaultDataDir('darwin', {}, '/Users/u')).toBe('/Users/u/Library/Application Support/Burnrate')
    expect(defaultDataDir('linux', {}, '/home/u')).toBe('/home/u/.config/Burnrate')
    expect(defaultDataDir('linux', { XDG_CONFIG_HOME: '/x' }, '/home/u')).toBe('/x/Burnrate')
    expect(defaultDataDir('win32', { APPDATA: 'C:\\Users\\u\\AppData\\Roaming' }, 'C:\\Users\\u')).toMatch(/AppData.Roaming.Burnrate$/)
  })
})
