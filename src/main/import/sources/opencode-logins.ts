import { readFile } from 'node:fs/promises'
import { join } from 'node:path'

/**
 * The providers opencode is logged in to with an account (OAuth: a ChatGPT login for `openai`,
 * a Claude account for `anthropic`) rather than an API key, from its `auth.json` in the data
 * folder its logs are in (`{ "<providerID>": { "type": "oauth" | "api" | "wellknown", ... } }`,
 * opencode's Auth.Info). Only each entry's `type` is kept: the file's tokens and keys are dropped
 * with the parse, never stored, logged or copied. No file, a broken one, or one of another shape
 * is no login at all (every call stays money), never an error: its parse error (which may quote
 * the file) is swallowed unseen.
 *
 * It tells today's logins: a message written under an earlier one is read by today's.
 */
export async function opencodeLogins(root: string): Promise<ReadonlySet<string>> {
  const logins = new Set<string>()
  let auth: unknown
  try {
    auth = JSON.parse(await readFile(join(root, 'auth.json'), 'utf8'))
  } catch {
    return logins
  }
  if (!auth || typeof auth !== 'object' || Array.isArray(auth)) return logins
  for (const [provider, entry] of Object.entries(auth)) {
    if (entry && typeof entry === 'object' && (entry as { type?: unknown }).type === 'oauth') logins.add(provider)
  }
  return logins
}
