// Placeholder until the proxy benchmark lands (work in progress this session).
export async function runProxyBench(): Promise<void> {
  throw new Error('the proxy benchmark is not written yet')
}
