// Placeholder until the dashboard benchmark lands (work in progress this session).
export async function runDashboardBench(): Promise<void> {
  throw new Error('the dashboard benchmark is not written yet')
}
