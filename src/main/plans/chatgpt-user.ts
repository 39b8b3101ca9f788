import { bearerCredential } from '../security/secrets'

/** Tokens remembered with the user their payload names (bounded: tokens come from clients). */
const MAX_TOKENS = 1024
const users = new Map<string, string>()

/**
 * The user a ChatGPT login's access token is of, within its workspace: the token's payload
 * `https://api.openai.com/auth` claim, `chatgpt_account_user_id` (else `chatgpt_user_id`,
 * `user_id`). The `chatgpt-account-id` Codex sends is the workspace's, the same for every member
 * of a Team or Business workspace, whose plan windows are each member's own. The payload is read,
 * not verified (it names the account, it proves nothing); '' when there is none. `key` is the
 * token's hash, under which the answer is remembered.
 */
export function chatgptUser(authorization: string | undefined, key: string): string {
  const known = users.get(key)
  if (known !== undefined) return known
  let user = ''
  // The bearer token as the proxy reads the call's key from the same header (attribution.ts).
  const token = authorization === undefined ? '' : (bearerCredential(authorization) ?? '')
  const payload = token.split('.')[1]
  if (payload) {
    try {
      const auth = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'))?.['https://api.openai.com/auth']
      for (const f of ['chatgpt_account_user_id', 'chatgpt_user_id', 'user_id']) {
        if (typeof auth?.[f] === 'string' && auth[f]) {
          user = auth[f]
          break
        }
      }
    } catch {
      // not a JWT: the workspace alone
    }
  }
  if (users.size >= MAX_TOKENS) users.delete(users.keys().next().value as string)
  users.set(key, user)
  return user
}
