import { request, type Reply } from '../support/http'

export const TOKEN = 'admin-token-for-tests-0123456789'

export function admin(
  url: string,
  method: string,
  path: string,
  opts: { body?: unknown; raw?: string | Buffer; headers?: Record<string, string>; token?: string | null } = {},
): Promise<Reply> {
  const headers: Record<string, string> = { ...opts.headers }
  if (opts.token !== null) headers.authorization = `Bearer ${opts.token ?? TOKEN}`
  let body: string | Buffer | undefined = opts.raw
  if (opts.body !== undefined) {
    body = JSON.stringify(opts.body)
    headers['content-type'] ??= 'application/json'
  }
  return request(`${url}/api/admin${path}`, { method, headers, body })
}

export const ADMIN_CONFIG = { admin: { enabled: true, token: TOKEN } }
