import { BrowserWindow, screen, shell, type NativeImage } from 'electron'
import { readJsonFile, writeJsonFile } from '../desktop-logic/json-file'
import { classifyNavigation } from '../desktop-logic/navigation'
import { MIN_WINDOW, captureWindowState, restoreWindowState } from '../desktop-logic/window-state'

export interface MainWindowOptions {
  /** The server the dashboard is loaded from; only its origin stays inside the window. */
  url: string
  /** `window-state.json` in userData. */
  stateFile: string
  /** False when started hidden at login. */
  show: boolean
  icon?: NativeImage
  /**
   * Attached to another Burnrate: whether the program on its port may be asked now (not another
   * user's, which may take the port once that server stops: ../desktop-logic/listener-owner.ts).
   * The window's requests to that address are cancelled while it may not: they carry the
   * dashboard's session cookie, and its pages would show that program's numbers.
   */
  allowed?: () => Promise<boolean>
}

export interface MainWindow {
  readonly window: BrowserWindow
  /** Shows, restores and focuses the window. */
  show(): void
  /** Lets the next close really close it (quitting); otherwise closing hides to the tray. */
  allowClose(): void
  saveState(): void
}

/** Permissions the dashboard may use: writing to the clipboard (its copy buttons). */
const ALLOWED_PERMISSIONS = new Set(['clipboard-sanitized-write'])

export function createMainWindow(opts: MainWindowOptions): MainWindow {
  const state = restoreWindowState(
    readJsonFile(opts.stateFile),
    screen.getAllDisplays().map((d) => d.workArea),
  )
  const win = new BrowserWindow({
    ...(state.x !== undefined && state.y !== undefined ? { x: state.x, y: state.y } : { center: true }),
    width: state.width,
    height: state.height,
    minWidth: MIN_WINDOW.width,
    minHeight: MIN_WINDOW.height,
    show: false,
    title: 'Burnrate',
    icon: opts.icon,
    autoHideMenuBar: true,
    webPreferences: {
      contextIsolation: true,
      sandbox: true,
      nodeIntegration: false,
      nodeIntegrationInSubFrames: false,
      webSecurity: true,
      allowRunningInsecureContent: false,
      spellcheck: false,
    },
  })
  if (state.maximized) win.maximize()

  const wc = win.webContents
  wc.session.setPermissionRequestHandler((_wc, permission, callback) => callback(ALLOWED_PERMISSIONS.has(permission)))
  const allowed = opts.allowed
  if (allowed) {
    const server = new URL(opts.url).host
    wc.session.webRequest.onBeforeRequest((details, callback) => {
      let host: string
      try {
        host = new URL(details.url).host
      } catch {
        return callback({})
      }
      if (host !== server) return callback({})
      void allowed().then(
        (ok) => callback({ cancel: !ok }),
        () => callback({}),
      )
    })
  }
  wc.setWindowOpenHandler(({ url }) => {
    const verdict = classifyNavigation(url, opts.url)
    if (verdict === 'inside') return { action: 'allow' }
    if (verdict === 'external') void shell.openExternal(url)
    return { action: 'deny' }
  })
  wc.on('will-navigate', (event, legacyUrl) => {
    const url = (event as { url?: string }).url ?? legacyUrl
    const verdict = classifyNavigation(url, opts.url)
    if (verdict === 'inside') return
    event.preventDefault()
    if (verdict === 'external') void shell.openExternal(url)
  })
  // An attached server that restarts: try again rather than leave a blank window.
  wc.on('did-fail-load', (_e, code, _desc, failedUrl, isMainFrame) => {
    if (!isMainFrame || code === -3 /* aborted, e.g. a download */) return
    if (classifyNavigation(failedUrl, opts.url) !== 'inside') return
    setTimeout(() => {
      if (!win.isDestroyed()) void win.loadURL(failedUrl).catch(() => {})
    }, 2000)
  })

  let quitting = false
  let saveTimer: NodeJS.Timeout | null = null
  const saveState = () => {
    if (saveTimer) clearTimeout(saveTimer)
    saveTimer = null
    if (win.isDestroyed()) return
    try {
      writeJsonFile(opts.stateFile, captureWindowState(win.getNormalBounds(), win.isMaximized()))
    } catch {
      // the window opens at its default size next time
    }
  }
  const saveSoon = () => {
    if (saveTimer) clearTimeout(saveTimer)
    saveTimer = setTimeout(saveState, 500)
  }
  win.on('resize', saveSoon)
  win.on('move', saveSoon)
  win.on('close', (event) => {
    saveState()
    if (quitting) return
    event.preventDefault()
    win.hide()
  })

  if (opts.show) win.once('ready-to-show', () => win.show())
  void win.loadURL(opts.url).catch(() => {})

  return {
    window: win,
    show() {
      if (win.isDestroyed()) return
      if (win.isMinimized()) win.restore()
      win.show()
      win.focus()
    },
    allowClose() {
      quitting = true
    },
    saveState,
  }
}
