import { OTLPExporterBase } from '@opentelemetry/otlp-exporter-base'
import { type OTLPExporterNodeConfigBase, convertLegacyHttpOptions, createOtlpHttpExportDelegate } from '@opentelemetry/otlp-exporter-base/node-http'
import { type IExportTraceServiceResponse, type ISerializer, JsonTraceSerializer, TraceExporterMetricsHelper } from '@opentelemetry/otlp-transformer'
import type { ReadableSpan } from '@opentelemetry/sdk-trace'
import { type Refused, keepingRefused } from './collector'
import { GEN_AI } from './semconv'

/** Span attributes that are doubles whatever their value (README: OpenTelemetry export). */
const DOUBLES = [GEN_AI.cost]

/**
 * The OTLP JSON encoder types a number by its value: a whole one (a call at $0, or at $2) is an
 * `intValue`, any other a `doubleValue`. A backend that types an attribute by the first value it
 * stores (Elasticsearch's dynamic mapping takes `long`, then truncates every later cost to whole
 * dollars) or keeps ints and doubles apart lost the costs of the other type. An attribute of
 * DOUBLES is written as a double, always. (The encoder writes a key and its value with unescaped
 * quotes only as JSON syntax, never inside a string, so the text names exactly those attributes.)
 */
const INT_DOUBLES = new RegExp(`"key":"(${DOUBLES.map((k) => k.replace(/\./g, '\\.')).join('|')})","value":\\{"intValue":`, 'g')

export function asDoubles(json: string): string {
  return json.replace(INT_DOUBLES, '"key":"$1","value":{"doubleValue":')
}

const serializer: ISerializer<ReadableSpan[], IExportTraceServiceResponse> = {
  serializeRequest(spans) {
    const body = JsonTraceSerializer.serializeRequest(spans)
    return body === undefined ? undefined : new TextEncoder().encode(asDoubles(new TextDecoder().decode(body)))
  },
  deserializeResponse: (data) => JsonTraceSerializer.deserializeResponse(data),
}

/** `OTLPTraceExporter` (OTLP/HTTP, JSON) with the cost a double in every span. */
export class SpanExporter extends OTLPExporterBase<ReadableSpan[]> {
  /** The spans the collector refused of the export whose callback runs now (a partial success), or null. */
  readonly takeRefused: () => Refused | null

  constructor(config: OTLPExporterNodeConfigBase) {
    const kept = keepingRefused(serializer, 'rejectedSpans')
    super(
      createOtlpHttpExportDelegate(
        convertLegacyHttpOptions(config, 'TRACES', 'v1/traces', { 'Content-Type': 'application/json' }),
        kept.serializer,
        'otlp_http_span_exporter',
        TraceExporterMetricsHelper,
        undefined,
      ),
    )
    this.takeRefused = kept.take
  }
}
