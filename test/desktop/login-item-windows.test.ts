import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, expect, it, vi } from 'vitest'
import { resetElectron, state } from './fake-electron'

vi.mock('electron', () => import('./fake-electron'))
const { loginItem } = await import('../../src/main/desktop/login-item')

/**
 * Windows: the person turned Burnrate off in Task Manager's Startup apps. Its Run key stays
 * (openAtLogin is still true) but Windows will not start it: "Start at login" must show unticked.
 */

let dir: string
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'burnrate-login-item-'))
  resetElectron(dir)
})
afterEach(() => rmSync(dir, { recursive: true, force: true }))

it('shows "Start at login" off when the Run key is turned off in Task Manager', () => {
  state.loginItem = { openAtLogin: true, wasOpenedAtLogin: false, executableWillLaunchAtLogin: false }
  expect(loginItem('win32').enabled()).toBe(false)
})

it('shows it on while Windows will start it', () => {
  state.loginItem = { openAtLogin: true, wasOpenedAtLogin: false, executableWillLaunchAtLogin: true }
  expect(loginItem('win32').enabled()).toBe(true)
})

it('ticking it again turns it back on', () => {
  state.loginItem = { openAtLogin: true, wasOpenedAtLogin: false, executableWillLaunchAtLogin: false }
  const item = loginItem('win32')
  item.set(true)
  expect(item.enabled()).toBe(true)
})
