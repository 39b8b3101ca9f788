import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { readJsonFile, writeJsonFile } from './json-file'
import { DEFAULT_WINDOW, captureWindowState, restoreWindowState } from './window-state'

const LAPTOP = { x: 0, y: 25, width: 1440, height: 875 }
const EXTERNAL = { x: 1440, y: 0, width: 2560, height: 1440 }

describe('window state', () => {
  it('round-trips through the state file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'burnrate-win-'))
    try {
      const file = join(dir, 'window-state.json')
      writeJsonFile(file, captureWindowState({ x: 100.4, y: 80, width: 1000, height: 700 }, true))
      expect(restoreWindowState(readJsonFile(file), [LAPTOP])).toEqual({ x: 100, y: 80, width: 1000, height: 700, maximized: true })
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('falls back to the default for a missing or corrupt file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'burnrate-win-'))
    try {
      const file = join(dir, 'window-state.json')
      expect(restoreWindowState(readJsonFile(file), [LAPTOP])).toEqual(DEFAULT_WINDOW)
      writeFileSync(file, '{"width": 9')
      expect(restoreWindowState(readJsonFile(file), [LAPTOP])).toEqual(DEFAULT_WINDOW)
      expect(restoreWindowState({ width: 'wide', height: 3 }, [LAPTOP])).toEqual(DEFAULT_WINDOW)
      expect(restoreWindowState({ width: Number.NaN, height: 3 }, [LAPTOP])).toEqual(DEFAULT_WINDOW)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('keeps a position on a second screen while that screen is there', () => {
    const saved = { x: 2000, y: 100, width: 1600, height: 1000, maximized: false }
    expect(restoreWindowState(saved, [LAPTOP, EXTERNAL])).toEqual(saved)
  })

  it('drops a position left on an unplugged screen, and fits the size to the screen that is left', () => {
    const saved = { x: 2000, y: 100, width: 1600, height: 1000, maximized: false }
    expect(restoreWindowState(saved, [LAPTOP])).toEqual({ width: 1440, height: 875, maximized: false })
  })

  it('drops a position that leaves only a sliver on screen', () => {
    expect(restoreWindowState({ x: 1420, y: 100, width: 800, height: 600 }, [LAPTOP])).toEqual({ width: 800, height: 600, maximized: false })
  })

  it('never opens below the minimum size', () => {
    expect(restoreWindowState({ x: 10, y: 40, width: 50, height: 20 }, [LAPTOP])).toEqual({ x: 10, y: 40, width: 720, height: 520, maximized: false })
  })

  it('never restores a window off the screen once its size is fitted to it (a monitor above the laptop unplugged)', () => {
    // On a monitor above the laptop's, reaching 75 px down into the laptop's screen: 1000 px high,
    // it is cut to the laptop's 875, and at y -900 it would end at -25, wholly above the screen.
    const state = restoreWindowState({ x: 100, y: -900, width: 1000, height: 1000 }, [LAPTOP])
    const bottom = (state.y ?? LAPTOP.y) + state.height
    expect(bottom).toBeGreaterThan(LAPTOP.y + 60)
  })

  it('never restores a window whose title bar is off every screen (it could not be dragged back)', () => {
    // The top 200 px above the laptop's screen, the rest on it: the title bar is out of reach.
    const state = restoreWindowState({ x: 100, y: -175, width: 800, height: 600 }, [LAPTOP])
    expect(state.y === undefined || state.y >= LAPTOP.y).toBe(true)
  })
})
