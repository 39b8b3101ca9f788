import { UNDICI_BUILTINS, preloadUndici } from '../proxy/call/undici'
import type { ApiApp } from './api-app'
import { holdAgain } from './startup-tiering'

/**
 * What the server answers before it needs it loads a moment (`ms`) after it answers (before the
 * start-up collection at 1 s of quiet takes its garbage), unless a request needed it first: the
 * proxy's HTTP client (undici) and the API app (express and its routes). Nothing once `stopping`.
 */
export function preloadLater(ms: number, app: ApiApp, stopping: () => boolean): void {
  setTimeout(() => {
    if (stopping()) return
    const resume = holdAgain(UNDICI_BUILTINS)
    try {
      preloadUndici()
    } finally {
      resume()
    }
    app.preload()
  }, ms).unref()
}
