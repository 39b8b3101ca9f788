/**
 * A stand-in for the `electron` module (the binary cannot run here), in the manner of
 * Electron Fiddle's tests: each class records what the app asked of it, and `app` fires
 * the lifecycle events the way Electron does (before-quit can be prevented).
 */
import { EventEmitter } from 'node:events'

export const state = {
  userData: '',
  appPath: process.cwd(),
  singleInstance: true,
  /** executableWillLaunchAtLogin: Windows, false when the Run key is turned off (Task Manager's Startup apps). */
  loginItem: { openAtLogin: false, wasOpenedAtLogin: false } as { openAtLogin: boolean; wasOpenedAtLogin: boolean; executableWillLaunchAtLogin?: boolean },
  /** The button index dialog.showMessageBox answers with. */
  messageBoxResponse: 0,
  /** Answers for the next message boxes, in turn, before `messageBoxResponse` applies again. */
  messageBoxResponses: [] as number[],
  messageBoxes: [] as any[],
  errorBoxes: [] as { title: string; content: string }[],
  openedExternal: [] as string[],
  clipboard: '',
  notifications: [] as FakeNotification[],
  windows: [] as FakeBrowserWindow[],
  trays: [] as FakeTray[],
  quitCalls: 0,
  exited: false,
  /** What the system's proxy settings answer for a URL (Electron's session.resolveProxy). */
  systemProxy: (_url: string): string => 'DIRECT',
}

export function resetElectron(userData: string): void {
  state.systemProxy = () => 'DIRECT'
  state.userData = userData
  state.singleInstance = true
  state.loginItem = { openAtLogin: false, wasOpenedAtLogin: false }
  state.messageBoxResponse = 0
  state.messageBoxResponses = []
  state.messageBoxes = []
  state.errorBoxes = []
  state.openedExternal = []
  state.clipboard = ''
  state.notifications = []
  state.windows = []
  state.trays = []
  state.quitCalls = 0
  state.exited = false
  app.removeAllListeners()
}

class FakeApp extends EventEmitter {
  isPackaged = false
  whenReady() {
    return Promise.resolve()
  }
  getPath(name: string) {
    if (name !== 'userData') throw new Error(`fake app.getPath: ${name} not faked`)
    return state.userData
  }
  getAppPath() {
    return state.appPath
  }
  appUserModelId = ''
  setAppUserModelId(id: string) {
    this.appUserModelId = id
  }
  requestSingleInstanceLock() {
    return state.singleInstance
  }
  getLoginItemSettings() {
    return { ...state.loginItem }
  }
  setLoginItemSettings(s: { openAtLogin: boolean }) {
    state.loginItem.openAtLogin = s.openAtLogin
    // Electron's `enabled` (default true) turns the entry back on in Startup apps.
    if (state.loginItem.executableWillLaunchAtLogin !== undefined) state.loginItem.executableWillLaunchAtLogin = s.openAtLogin
  }
  /** Like Electron: before-quit (preventable), then windows close, then will-quit and quit. */
  quit() {
    state.quitCalls++
    let prevented = false
    const event = { preventDefault: () => (prevented = true) }
    this.emit('before-quit', event)
    if (prevented) return
    for (const w of [...state.windows]) w.close()
    this.emit('will-quit', { preventDefault() {} })
    state.exited = true
    this.emit('quit')
  }
  exit() {
    state.exited = true
  }
}
export const app = new FakeApp()

type BeforeRequest = (details: { url: string }, cb: (r: { cancel?: boolean }) => void) => void

class FakeSession {
  permissionHandler: ((wc: unknown, permission: string, cb: (ok: boolean) => void) => void) | null = null
  beforeRequest: BeforeRequest | null = null
  webRequest = {
    onBeforeRequest: (handler: BeforeRequest) => {
      this.beforeRequest = handler
    },
  }
  /** What the window's session does with a request to `url`: true when it goes ahead. */
  request(url: string): Promise<boolean> {
    const h = this.beforeRequest
    if (!h) return Promise.resolve(true)
    return new Promise((resolve) => h({ url }, (r) => resolve(!r.cancel)))
  }
  setPermissionRequestHandler(h: FakeSession['permissionHandler']) {
    this.permissionHandler = h
  }
}

class FakeWebContents extends EventEmitter {
  session = new FakeSession()
  openHandler: ((d: { url: string }) => { action: string }) | null = null
  setWindowOpenHandler(h: FakeWebContents['openHandler']) {
    this.openHandler = h
  }
  /** Simulates a link click: returns whether the navigation went ahead. */
  navigate(url: string): boolean {
    let prevented = false
    this.emit('will-navigate', { url, preventDefault: () => (prevented = true) }, url)
    return !prevented
  }
}

export class FakeBrowserWindow extends EventEmitter {
  webContents = new FakeWebContents()
  loadedUrls: string[] = []
  visible = false
  focused = false
  maximized = false
  minimized = false
  destroyed = false
  bounds: { x: number; y: number; width: number; height: number }
  constructor(readonly options: any) {
    super()
    this.bounds = { x: options.x ?? 100, y: options.y ?? 100, width: options.width, height: options.height }
    state.windows.push(this)
  }
  loadURL(url: string) {
    this.loadedUrls.push(url)
    queueMicrotask(() => this.emit('ready-to-show'))
    return Promise.resolve()
  }
  show() {
    this.visible = true
  }
  hide() {
    this.visible = false
  }
  focus() {
    this.focused = true
  }
  isVisible() {
    return this.visible
  }
  isMinimized() {
    return this.minimized
  }
  restore() {
    this.minimized = false
  }
  maximize() {
    this.maximized = true
  }
  isMaximized() {
    return this.maximized
  }
  getNormalBounds() {
    return { ...this.bounds }
  }
  setBounds(b: Partial<FakeBrowserWindow['bounds']>) {
    this.bounds = { ...this.bounds, ...b }
    this.emit('resize')
  }
  isDestroyed() {
    return this.destroyed
  }
  /** Like a click on the close button: 'close' can be prevented. */
  close() {
    let prevented = false
    this.emit('close', { preventDefault: () => (prevented = true) })
    if (prevented) return
    this.destroyed = true
    this.visible = false
    state.windows = state.windows.filter((w) => w !== this)
    this.emit('closed')
  }
}
export const BrowserWindow = FakeBrowserWindow

export class FakeTray extends EventEmitter {
  image: any
  title = ''
  titleOptions: any = null
  tooltip = ''
  menu: FakeMenu | null = null
  destroyed = false
  constructor(image: any) {
    super()
    this.image = image
    state.trays.push(this)
  }
  setImage(i: any) {
    this.image = i
  }
  setTitle(t: string, o?: any) {
    this.title = t
    this.titleOptions = o
  }
  setToolTip(t: string) {
    this.tooltip = t
  }
  setContextMenu(m: FakeMenu) {
    this.menu = m
  }
  isDestroyed() {
    return this.destroyed
  }
  destroy() {
    this.destroyed = true
  }
}
export const Tray = FakeTray

export class FakeMenu {
  constructor(readonly items: any[]) {}
  /** Clicks the item with this label. */
  click(label: string) {
    const item = this.items.find((i) => i.label === label)
    if (!item) throw new Error(`no menu item "${label}"`)
    item.click?.()
  }
}
export const Menu = {
  buildFromTemplate: (template: any[]) => new FakeMenu(template),
}

export const nativeImage = {
  createFromPath: (path: string) => {
    const img = {
      path,
      template: false,
      setTemplateImage(t: boolean) {
        img.template = t
      },
      isEmpty: () => false,
    }
    return img
  },
}

export class FakeNotification extends EventEmitter {
  shown = false
  constructor(readonly options: { title: string; body: string; urgency?: string }) {
    super()
    state.notifications.push(this)
  }
  static isSupported() {
    return true
  }
  show() {
    this.shown = true
  }
}
export const Notification = FakeNotification

export const shell = {
  openExternal: (url: string) => {
    state.openedExternal.push(url)
    return Promise.resolve()
  },
}

export const clipboard = {
  writeText: (text: string) => {
    state.clipboard = text
  },
}

export const screen = {
  getAllDisplays: () => [{ workArea: { x: 0, y: 0, width: 1920, height: 1080 } }],
}

export const dialog = {
  showMessageBox: (options: any) => {
    state.messageBoxes.push(options)
    return Promise.resolve({ response: state.messageBoxResponses.shift() ?? state.messageBoxResponse, checkboxChecked: false })
  },
  showErrorBox: (title: string, content: string) => {
    state.errorBoxes.push({ title, content })
  },
}

export const session = {
  defaultSession: {
    resolveProxy: async (url: string): Promise<string> => state.systemProxy(url),
  },
}

export default { app, BrowserWindow, Tray, Menu, nativeImage, Notification, shell, clipboard, screen, dialog, session }
