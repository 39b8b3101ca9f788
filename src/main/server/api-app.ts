import type http from 'node:http'
import type { Express } from 'express'
import { sendError } from '../http/errors'
import { dropUnreadBody } from '../http/unread-body'
import type { Logger } from '../log'
import { expressModule, type ExpressModule, loadExpress } from './express-module'
import { createApiApp, finishApiApp } from './express'
import { holdAgain } from './startup-tiering'

/** Adds a feature's routes to the express app, given the app and the express module. */
export type RouteInstaller = (app: Express, express: ExpressModule) => void

/**
 * Everything that is not a proxied call (the dashboard's API and page, admin, ingest, metrics) is
 * an express app, built when it is first needed rather than at start-up: express and its forty
 * packages take 80-100 ms to load on a slow machine, and no proxied call needs them. Features
 * add their routes (`add`); the app is built, in the order they were added, on the first request
 * for it or once the server is up (`preload`, a moment after it listens), whichever comes first.
 * Requests that arrive while it loads wait for it. `GET /api/health` is answered without it
 * (`bare`), so the server is ready as soon as it listens.
 */
export interface ApiRoutes {
  /** Adds routes, installed when the app is built (never after: features add theirs at start-up). */
  add(install: RouteInstaller): void
  /** A `GET`/`HEAD` route answered without the app: its exact path (any case, one trailing slash), any query. */
  bare(path: string, handler: http.RequestListener): void
}

export class ApiApp implements ApiRoutes {
  private readonly installs: RouteInstaller[] = []
  private readonly bareRoutes = new Map<string, http.RequestListener>()
  private app: Express | null = null
  private loading: Promise<Express> | null = null

  /**
   * `needs`: what the routes need ready before the app serves (the server's prices, its Pricer's
   * `ready()`: ../pricing/library.ts), made ready while express loads.
   */
  constructor(
    private readonly log: Logger,
    private readonly needs: () => Promise<unknown> = async () => {},
  ) {}

  add(install: RouteInstaller): void {
    if (this.loading) throw new Error('routes must be added before the API app is built')
    this.installs.push(install)
  }

  bare(path: string, handler: http.RequestListener): void {
    this.bareRoutes.set(path.toLowerCase(), handler)
  }

  /** Whether express has been loaded and the app built. */
  get built(): boolean {
    return this.app !== null
  }

  handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    // A request answered with its body unread (a POST to no route, a wrong media type, a body a
    // route refuses before reading it) has that body read only so far (../http/unread-body.ts):
    // Node's own way read the rest, however long, to keep the connection. ('prefinish': at
    // 'finish' Node has begun that, and no longer passes the body's bytes on.)
    if (req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined) res.once('prefinish', () => dropUnreadBody(req))
    if (this.bareRoutes.size > 0 && (req.method === 'GET' || req.method === 'HEAD')) {
      const bare = this.bareRoutes.get(pathOf(req.url ?? '/'))
      if (bare) {
        bare(req, res)
        return
      }
    }
    if (this.app) {
      this.app(req, res)
      return
    }
    this.build().then(
      (app) => app(req, res),
      (err: Error) => {
        this.log.error(`the dashboard and API routes could not be loaded: ${err.message}`)
        sendError(res, 'internal', 'Burnrate could not load its API routes; the details are in its log.')
      },
    )
  }

  /** Builds the app now, off any request (a moment after start-up), so the dashboard's first request does not wait. */
  preload(): void {
    this.build().catch((err: Error) => this.log.error(`the dashboard and API routes could not be loaded: ${err.message}`))
  }

  private build(): Promise<Express> {
    if (this.loading) return this.loading
    const resume = holdAgain()
    const loading = Promise.all([loadExpress(), this.needs()])
      .then(() => {
        const express = expressModule()
        const app = createApiApp(express)
        for (const install of this.installs) install(app, express)
        finishApiApp(app, this.log)
        this.app = app
        return app
      })
      .finally(resume)
    this.loading = loading
    // A failed load is tried again by the next request.
    loading.catch(() => {
      if (this.loading === loading) this.loading = null
    })
    return loading
  }
}

/** A request target's path, lowercased, without its query and one trailing slash (as express matches by default). */
function pathOf(url: string): string {
  const q = url.indexOf('?')
  let p = q < 0 ? url : url.slice(0, q)
  if (p.length > 1 && p.endsWith('/')) p = p.slice(0, -1)
  return p.toLowerCase()
}
