import type { GroupBy, Range } from '../../../shared/api'

export const RANGE_LABELS: Record<Range, string> = {
  '30m': 'last 30 minutes',
  '1h': 'last hour',
  '6h': 'last 6 hours',
  '24h': 'last 24 hours',
  '7d': 'last 7 days',
  '30d': 'last 30 days',
}

export const GROUP_LABELS: Record<GroupBy, string> = {
  model: 'Model',
  provider: 'Provider',
  agent: 'Agent',
  session: 'Session',
  api_key: 'API key',
  tenant: 'Tenant',
  project: 'Project',
  member: 'Member',
}
