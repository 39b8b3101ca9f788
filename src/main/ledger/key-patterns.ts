/**
 * One budget rule prefix pattern an API key (by hash) was seen to match (`key_patterns`, ledger
 * migration 22; budgets/key-patterns.ts). Defined here because the ledger writes these rows in
 * the transaction of its batch of calls, on whichever thread writes it (./write-worker.ts).
 */
export interface KeyPattern {
  api_key_hash: string
  pattern: string
}

export const INSERT_KEY_PATTERN_SQL = 'INSERT OR IGNORE INTO key_patterns (api_key_hash, pattern) VALUES (@api_key_hash, @pattern)'
