import { afterAll, describe, expect, it } from 'vitest'
import { OtelPipeline } from '../../src/main/otel/pipeline'
import { makeCall } from '../dashboard/seed'
import { eventually } from '../support/http'
import { startCollector } from './support'

/**
 * Burnrate bounds the OTLP attributes itself (200 models, 50 agents, 200 tenants; then `other`), and
 * a team's cost breakdown easily has more than the OpenTelemetry SDK's default 2,000 attribute sets
 * per instrument (20 models x 10 agents x 20 tenants is 4,000): past it the SDK folds every new set
 * into one `otel.metric.overflow` point, and the cost of those calls loses its model, agent and tenant.
 */
describe('OTLP cost series beyond 2,000 attribute sets', () => {
  const cleanups: (() => unknown)[] = []
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c()
  })

  it('keeps every model x agent set its own point, none folded into otel.metric.overflow', async () => {
    const c = await startCollector()
    cleanups.push(() => c.close())
    const p = new OtelPipeline({ endpoint: c.url, headers: {}, intervalMs: 200, timeoutMs: 5000, maxQueue: 10_000, traces: false, metrics: true, version: 'test' })
    cleanups.push(() => p.close())
    const models = 45
    const agents = 50
    for (let m = 0; m < models; m++) {
      for (let a = 0; a < agents; a++) p.observe(makeCall({ model: `model-${m}`, agent: `agent-${a}`, cost_usd: 0.01 }))
    }
    p.tick()
    const points = await eventually(() => {
      const body = c.metrics.at(-1)
      const cost = body?.resourceMetrics.flatMap((r: any) => r.scopeMetrics.flatMap((s: any) => s.metrics)).find((x: any) => x.name === 'gen_ai.usage.cost')
      const pts = cost?.sum?.dataPoints ?? []
      return pts.length >= Math.min(2000, models * agents) ? pts : null
    }, 20_000)
    const overflow = points!.filter((x: any) => x.attributes.some((a: any) => a.key === 'otel.metric.overflow'))
    expect(overflow).toEqual([])
    expect(points!.length).toBe(models * agents)
  })
})
