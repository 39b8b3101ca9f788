/** The budgets' "reached" test lives in src/shared, so the dashboard judges a limit as the proxy does. */
export { DRIFT, reached, reachedAt, budgetShare } from '../../shared/reached'
