import type { Router } from 'express'
import type { Budgets } from '../budgets'
import { errorBody } from '../http/errors'
import { jsonBody } from './json-body'
import { ruleJson } from './rule-json'
import { checkRule, RULE_FIELDS } from '../budgets/check'
import { watched } from '../proxy/ws/duplicate-keys'

/** A POST naming one twice is refused (./json-body.ts). */
const RULE_KEYS = watched(RULE_FIELDS)

/** GET, POST and DELETE `/budgets/rules` (contract: Admin API). */
export function ruleRoutes(router: Router, budgets: Budgets, configFile: string | null): void {
  const { engine, store } = budgets

  router.get('/budgets/rules', (_req, res) => {
    res.json(engine.rules.list().map((x) => ruleJson(x.rule, x.overridden)))
  })

  router.post('/budgets/rules', ...jsonBody(RULE_KEYS), async (req, res) => {
    const checked = checkRule(req.body)
    if (!checked.ok) {
      res.status(400).json(errorBody('invalid_request', checked.message, checked.param ? { param: checked.param } : undefined))
      return
    }
    // The engine's index is updated before this handler answers (SQLite: in the same step;
    // PostgreSQL: once the write committed; the other instances within a second).
    const { rule, created } = await store.put(checked.rule)
    res.status(created ? 201 : 200).json(ruleJson(rule))
  })

  router.delete('/budgets/rules', async (req, res) => {
    const pattern = req.query.pattern
    if (pattern === undefined) {
      res
        .status(400)
        .json(errorBody('invalid_request', 'The query parameter "pattern" is required: the api_key_pattern of the runtime rule to delete.', { param: 'pattern' }))
      return
    }
    if (typeof pattern !== 'string' || pattern === '') {
      res.status(400).json(errorBody('invalid_request', 'The query parameter "pattern" must be given once, non-empty.', { param: 'pattern' }))
      return
    }
    // A pattern is visible ASCII (checkRule): one with a NUL is no rule's, and PostgreSQL cannot be asked for it.
    if (!pattern.includes('\u0000') && (await store.delete(pattern))) {
      res.status(204).end()
      return
    }
    if (engine.rules.config.some((r) => r.api_key_pattern === pattern)) {
      const where = configFile ? `the config file ${configFile}` : 'the config file'
      res
        .status(409)
        .json(errorBody('conflict', `The rule "${pattern}" comes from ${where}; remove it from budgets.rules there and restart Burnrate.`))
      return
    }
    res.status(404).json(errorBody('not_found', `No runtime rule has the pattern "${pattern}".`))
  })
}
