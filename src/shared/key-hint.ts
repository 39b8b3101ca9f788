/**
 * How an API key is named wherever it is shown: its first three and last four characters
 * (`sk-…9f3a`), `…` for a key too short to show any of it, '' for none. The server names keys
 * by it in the ledger and the budgets; the dashboard matches a rule on a whole key by it.
 */
export function keyHint(key: string): string {
  if (!key) return ''
  if (key.length < 12) return '…'
  return `${key.slice(0, 3)}…${key.slice(-4)}`
}
