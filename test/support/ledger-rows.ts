import Database from 'better-sqlite3'

/** Every recorded call matching `where` (all of them by default), oldest first, read from a server's real SQLite file. */
export function ledgerRows(dbFile: string, where = '1 = 1'): any[] {
  const db = new Database(dbFile, { readonly: true })
  try {
    return db.prepare(`SELECT * FROM calls WHERE ${where} ORDER BY id`).all()
  } finally {
    db.close()
  }
}

/** The last call recorded in a server's real SQLite file (undefined: none yet). */
export function lastLedgerRow(dbFile: string): any {
  const db = new Database(dbFile, { readonly: true })
  try {
    return db.prepare('SELECT * FROM calls ORDER BY id DESC LIMIT 1').get()
  } finally {
    db.close()
  }
}
