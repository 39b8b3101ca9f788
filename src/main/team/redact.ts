/** How much of a team server's error text is kept. */
export const SERVER_TEXT_MAX = 300

/**
 * A team server's error text as Burnrate logs and reports it: without the team token (a server
 * or a proxy in front of it may echo the Authorization header) and without any `Bearer` secret,
 * redacted before the text is cut so that no piece of the token survives the cut.
 */
export function serverText(text: string, token: string): string {
  let out = text.replace(/\bbearer\s+[^\s"',;]+/gi, 'Bearer [redacted]')
  if (token) out = out.split(token).join('[team token]')
  return out.slice(0, SERVER_TEXT_MAX)
}
