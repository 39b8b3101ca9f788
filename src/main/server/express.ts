import type { ErrorRequestHandler, Express } from 'express'
import { bodyProblem, undecodablePath } from '../http/body-errors'
import { errorBody, STATUS_OF } from '../http/errors'
import type { Logger } from '../log'
import type { ExpressModule } from './express-module'

/** The express app that serves every route that is not a proxied call (./api-app.ts builds it). */
export function createApiApp(express: ExpressModule): Express {
  const app = express()
  app.disable('x-powered-by')
  app.set('etag', false)
  app.set('query parser', 'simple')
  return app
}

/** The contract's 404 and error shapes for whatever the features did not answer. */
export function finishApiApp(app: Express, log: Logger): void {
  app.use((req, res) => {
    res.status(404).json(errorBody('not_found', `No route ${req.method} ${req.path}.`))
  })
  const onError: ErrorRequestHandler = (err, req, res, _next) => {
    const e = err as { type?: string; status?: number; statusCode?: number; message?: string }
    const status = e.status ?? e.statusCode ?? 500
    if (res.headersSent) {
      res.destroy()
      return
    }
    const path = undecodablePath(err, req)
    const problem = path !== null ? { type: 'invalid_request' as const, message: path } : bodyProblem(err, req, 'The request body is too large.', false)
    if (problem !== null) {
      res.status(STATUS_OF[problem.type]).json(errorBody(problem.type, problem.message))
    } else if (status >= 400 && status < 500) {
      res.status(400).json(errorBody('invalid_request', e.message ?? 'Bad request.'))
    } else {
      log.error(`internal error: ${e.message ?? String(err)}`)
      res.status(500).json(errorBody('internal', 'Burnrate hit an internal error; the details are in its log.'))
    }
  }
  app.use(onError)
}
