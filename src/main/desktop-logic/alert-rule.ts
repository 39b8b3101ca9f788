import { isPrefix } from '../budgets/pattern'
import type { BudgetAlert } from '../budgets/types'

/**
 * The rule a budget alert belongs to, as the tray and the notices tell rules apart. A `*` rule is
 * its pattern (several keys under it are one budget to a person); a rule on a whole key is named
 * by the key's hint (first three and last four characters), which two keys can share: its key's
 * hash tells it apart.
 */
export function alertRuleId(a: Pick<BudgetAlert, 'api_key_pattern' | 'api_key_hash'>): string {
  return isPrefix(a.api_key_pattern) ? a.api_key_pattern : `${a.api_key_pattern}\u0000${a.api_key_hash}`
}
