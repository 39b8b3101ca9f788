import type { Request, Response, Router } from 'express'
import type { PriceInput } from '../../shared/api'
import { MAX_PRICE_MTOK } from '../config/schema'
import { errorBody } from '../http/errors'
import { feedIdOf } from '../budgets/feed/publish'
import { spendMover } from '../budgets/state/pg/call-spend'
import { pricesOf } from '../pricing/feature'
import { repriceModel } from '../pricing/reprice'
import type { ServerContext } from '../server/context'
import { jsonBody } from './json-body'
import { watched } from '../proxy/ws/duplicate-keys'

const FIELDS = ['input_mtok', 'output_mtok', 'cache_read_mtok', 'cache_write_mtok'] as const
/** A PUT naming one twice is refused (./json-body.ts). */
const PRICE_FIELDS = watched(FIELDS)

type Checked = { ok: true; price: PriceInput } | { ok: false; param: string | null; message: string }

/** Checks a PUT body: USD per million tokens, each a number from 0 to MAX_PRICE_MTOK (the cache ones may be null or absent). */
export function checkPrice(body: unknown): Checked {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return { ok: false, param: null, message: `The request body must be a JSON object with the fields ${FIELDS.join(', ')}.` }
  }
  const b = body as Record<string, unknown>
  const unknown = Object.keys(b).filter((k) => !(FIELDS as readonly string[]).includes(k))
  if (unknown.length > 0) {
    return { ok: false, param: unknown[0], message: `Unknown field "${unknown[0]}"; a price has only ${FIELDS.join(', ')}.` }
  }
  const out: Record<string, number | null> = {}
  for (const f of FIELDS) {
    const v = b[f]
    const optional = f.startsWith('cache_')
    if ((v === undefined || v === null) && optional) {
      out[f] = null
      continue
    }
    // Above MAX_PRICE_MTOK a call's cost could overflow to Infinity and be recorded unpriced.
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || v > MAX_PRICE_MTOK) {
      return {
        ok: false,
        param: f,
        message: `${f} must be a number from 0 to ${MAX_PRICE_MTOK} (US dollars per million tokens)${v === undefined ? '; it is required' : ''}.`,
      }
    }
    out[f] = v
  }
  return { ok: true, price: out as unknown as PriceInput }
}

/** The model named by the path's rest (a model name may contain `/`, as OpenRouter's do). */
function modelOf(req: Request): string {
  const m = (req.params as Record<string, unknown>).model
  return Array.isArray(m) ? m.join('/') : String(m ?? '')
}

/** Longest model name a price is set for (1,000 characters). */
export const MAX_MODEL_LENGTH = 1000

/**
 * 400 for a model name with a NUL byte (`%00`), which no provider names and PostgreSQL's text
 * cannot hold, or longer than MAX_MODEL_LENGTH, which PostgreSQL's index of prices cannot hold
 * (each failed there as a 500). Answers and returns false.
 */
function modelIsText(model: string, res: Response): boolean {
  const problem = model.includes('\u0000')
    ? 'The model name holds a NUL character (%00), which no model name has.'
    : model.length > MAX_MODEL_LENGTH
      ? `The model name is ${model.length} characters long; a model name has at most ${MAX_MODEL_LENGTH}.`
      : null
  if (problem === null) return true
  res.status(400).json(errorBody('invalid_request', problem, { param: 'model' }))
  return false
}

/**
 * Runtime prices (contract: second-wave additions): GET `/prices`, PUT and DELETE
 * `/prices/{provider}/{model}`, and POST `/prices/{provider}/{model}/reprice` to price that
 * model's past calls again (`?all=true`: every call of the model, not only the unpriced ones).
 */
export function priceRoutes(router: Router, ctx: ServerContext): void {
  const { store } = pricesOf(ctx)
  const provider = (req: Request, res: Response): string | null => {
    const name = String(req.params.provider)
    if (ctx.upstreams.has(name)) return name
    res.status(404).json(errorBody('not_found', `No provider is named "${name}"; use a name from GET /api/admin/providers.`, { param: 'provider' }))
    return null
  }

  router.get('/prices', async (_req, res, next) => {
    try {
      res.json({ prices: await store.all() })
    } catch (err) {
      next(err)
    }
  })

  router.post('/prices/:provider/*model', async (req, res, next) => {
    const segments = (req.params as Record<string, unknown>).model as string[]
    if (!Array.isArray(segments) || segments.length < 2 || segments[segments.length - 1] !== 'reprice') {
      res.status(404).json(errorBody('not_found', 'POST /api/admin/prices/{provider}/{model}/reprice re-prices a model; set a price with PUT.'))
      return
    }
    const name = provider(req, res)
    if (!name) return
    const model = segments.slice(0, -1).join('/')
    if (!modelIsText(model, res)) return
    const all = req.query.all
    if (all !== undefined && all !== 'true' && all !== 'false') {
      res.status(400).json(errorBody('invalid_request', 'The parameter all must be true or false.', { param: 'all' }))
      return
    }
    try {
      const pricingId = ctx.upstreams.get(name)!.provider.pricingId
      // PostgreSQL: the prices every instance shares as they are now (one may have been set through
      // another instance a moment ago: the poll would see it within a second, after this re-price).
      await store.refresh?.()
      const shared = ctx.store.dialect === 'postgres' ? spendMover(ctx.config) : undefined
      res.json(await repriceModel(ctx.store, ctx.ledger, ctx.pricer, pricingId, name, model, all === 'true', { meters: ctx.budgets, shared, feedId: feedIdOf(ctx.store) }))
    } catch (err) {
      next(err)
    }
  })

  router.put('/prices/:provider/*model', ...jsonBody(PRICE_FIELDS), async (req, res, next) => {
    const name = provider(req, res)
    if (!name) return
    if (!modelIsText(modelOf(req), res)) return
    const checked = checkPrice(req.body)
    if (!checked.ok) {
      res.status(400).json(errorBody('invalid_request', checked.message, checked.param ? { param: checked.param } : undefined))
      return
    }
    try {
      // Written and read back before the answer: this instance's next call of the model is priced with it.
      const { price } = await store.put({ provider: name, model: modelOf(req), ...checked.price })
      res.status(200).json(price)
    } catch (err) {
      next(err)
    }
  })

  router.delete('/prices/:provider/*model', async (req, res, next) => {
    const name = provider(req, res)
    if (!name) return
    const model = modelOf(req)
    if (!modelIsText(model, res)) return
    try {
      if (await store.delete(name, model)) {
        res.status(204).end()
        return
      }
      res.status(404).json(errorBody('not_found', `No runtime price is set for ${name} ${model}.`))
    } catch (err) {
      next(err)
    }
  })
}
