import type { GroupBy } from '../../../shared/api'

/** What an empty attribution value means, per grouping. */
const NONE: Record<GroupBy, string> = {
  model: '(unknown model)',
  provider: '(unknown provider)',
  agent: '(no agent)',
  session: '(no session)',
  api_key: '(no key)',
  tenant: '(no tenant)',
  project: '(no project)',
  member: '(this server)',
}

export function noneLabel(group: GroupBy): string {
  return NONE[group]
}

/** A SHA-256 hex shortened for a table cell: `3f2a9c…9c1d`. */
export function shortHash(hash: string): string {
  return hash.length > 14 ? `${hash.slice(0, 8)}…${hash.slice(-4)}` : hash
}
