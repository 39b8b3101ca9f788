import { join } from 'node:path'
import type { Response } from 'express'
import { errorBody } from '../http/errors'
import type { Feature } from '../server/context'
import { UI_HEADERS } from './csp'
import { findRendererDir } from './renderer-dir'

/**
 * Serves the built dashboard at `/` (with an SPA fallback to index.html for page paths), only when
 * `dashboard.enabled`. `/api/*` is never answered here. When the renderer was not built, page
 * requests get a 503 JSON saying how to build it; the server itself runs on.
 */
export const dashboardUi: Feature = (ctx) => {
  if (!ctx.config.dashboard.enabled) return
  const dir = findRendererDir()
  if (!dir) ctx.log.warn('dashboard not built (no out/renderer/index.html); run `npm run build` to serve it at /')

  const setHeaders = (res: Response) => {
    for (const [k, v] of Object.entries(UI_HEADERS)) res.setHeader(k, v)
  }
  ctx.app.add((app, express) => {
    if (dir) {
      app.use(
        '/assets',
        express.static(join(dir, 'assets'), {
          index: false,
          fallthrough: true,
          immutable: true,
          maxAge: '365d',
          setHeaders,
        }),
      )
    }
    app.use((req, res, next) => {
      // Only a browser navigation (it asks for text/html) gets the page; an SDK or script that
      // mistypes a path gets the contract's JSON 404, never HTML.
      const wantsHtml = req.path === '/' || (req.headers.accept ?? '').includes('text/html')
      if ((req.method !== 'GET' && req.method !== 'HEAD') || !wantsHtml || !isPagePath(req.path)) return next()
      setHeaders(res)
      if (!dir) {
        res
          .status(503)
          .json(errorBody('service_unavailable', 'The dashboard is not built; run `npm run build` (or `npm start`), then reload.'))
        return
      }
      res.setHeader('cache-control', 'no-cache')
      res.sendFile(join(dir, 'index.html'), (err) => {
        if (err && !res.headersSent) next(err)
      })
    })
  })
}

/**
 * A path the single-page app answers: not the API, not a missing asset file (`/x.js` stays a 404).
 * The API in any case (`/API/admin/x`): express routes it case-insensitively and the guard lets
 * such paths skip dashboard.token, so the page must never answer them.
 */
export function isPagePath(path: string): boolean {
  const api = path.toLowerCase()
  if (api === '/api' || api.startsWith('/api/') || path.startsWith('/assets/')) return false
  const last = path.slice(path.lastIndexOf('/') + 1)
  return !last.includes('.') || last.endsWith('.html')
}
