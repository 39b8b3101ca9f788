import { z } from 'zod'

export interface Rect {
  x: number
  y: number
  width: number
  height: number
}

/** The window's last size and position, kept in `window-state.json` in userData. */
export interface WindowState {
  /** Absent: let the system center the window. */
  x?: number
  y?: number
  width: number
  height: number
  maximized: boolean
}

export const DEFAULT_WINDOW: WindowState = { width: 1280, height: 860, maximized: false }
export const MIN_WINDOW = { width: 720, height: 520 }
/** How much of the window must lie on a screen for the saved position to be kept. */
const VISIBLE = { width: 120, height: 60 }

const coord = z.number().int().min(-100_000).max(100_000)
const size = z.number().int().min(1).max(100_000)
const stateSchema = z.object({
  x: coord.optional(),
  y: coord.optional(),
  width: size,
  height: size,
  maximized: z.boolean().optional(),
})

function overlap(a: Rect, b: Rect): { width: number; height: number } {
  const w = Math.min(a.x + a.width, b.x + b.width) - Math.max(a.x, b.x)
  const h = Math.min(a.y + a.height, b.y + b.height) - Math.max(a.y, b.y)
  return { width: Math.max(0, w), height: Math.max(0, h) }
}

/** The size `state` is kept within on `screen`: never larger than it, never below the minimum. */
function fitted(state: { width: number; height: number }, screen: Rect): { width: number; height: number } {
  return {
    width: Math.min(state.width, Math.max(MIN_WINDOW.width, screen.width)),
    height: Math.min(state.height, Math.max(MIN_WINDOW.height, screen.height)),
  }
}

/**
 * The state to open the window with, from what the state file held (anything, possibly
 * garbage) and the screens' work areas now: a position that would put the window off every
 * screen (a monitor was unplugged) is dropped so it opens centered, and the size is kept
 * within the screen it lands on and above the minimum. A position is kept only when the window's
 * top (its title bar, by which it is moved) lies on that screen, at the size it opens with:
 * a window cut to a smaller screen shrinks from the bottom, and one kept for its lower part
 * could open with its title bar above the screen, or wholly off it.
 */
export function restoreWindowState(raw: unknown, workAreas: readonly Rect[]): WindowState {
  const parsed = stateSchema.safeParse(raw)
  if (!parsed.success) return { ...DEFAULT_WINDOW }
  const s = parsed.data
  const state: WindowState = {
    width: Math.max(MIN_WINDOW.width, s.width),
    height: Math.max(MIN_WINDOW.height, s.height),
    maximized: s.maximized ?? false,
  }
  let screen: Rect | undefined
  if (s.x !== undefined && s.y !== undefined) {
    const { x, y } = s
    screen = workAreas.find((a) => {
      const size = fitted(state, a)
      // The top strip of the window as it opens on this screen, wholly within it from top to bottom.
      const top = overlap({ x, y, width: size.width, height: VISIBLE.height }, a)
      return y >= a.y && top.width >= VISIBLE.width && top.height >= VISIBLE.height
    })
    if (screen) {
      state.x = x
      state.y = y
    }
  }
  const fit = screen ?? workAreas[0]
  if (fit) Object.assign(state, fitted(state, fit))
  return state
}

/** What to save: the normal (not maximized) bounds, and whether it was maximized. */
export function captureWindowState(normalBounds: Rect, maximized: boolean): WindowState {
  return {
    x: Math.round(normalBounds.x),
    y: Math.round(normalBounds.y),
    width: Math.round(normalBounds.width),
    height: Math.round(normalBounds.height),
    maximized,
  }
}
