/**
 * OpenTelemetry traces of documents, exported over OTLP (HTTP/protobuf), off by default
 * (`tracing.enabled`). Each document is one span, a child of the producer's `traceparent` when its
 * event carries one ("process <input topic>", kind CONSUMER, by the messaging conventions); its steps
 * (admission, blob fetch, the API calls, each poll, waits, each publish, a dead letter) are child
 * spans, recorded when they end with the times they took. Outputs carry the document span's
 * `traceparent`, so a downstream consumer continues the trace. Attributes hold ids, topics, offsets,
 * HTTP methods, routes and statuses, stages and codes: never a blob address, a file name, a
 * document's content or attributes, nor a token. Off, nothing of the SDK is loaded and every call is
 * a no-op on one shared object.
 */
import type { Attributes, Context, Span, SpanKind, Tracer } from '@opentelemetry/api';
import type { Logger } from './logger.js';

/** One document's trace. */
export interface DocumentTrace {
  /** Its span's traceparent (what its outputs carry); null when not traced. */
  readonly traceparent: string | null;
  /** A step that ran from `startedAt` (epoch ms) until now; `error`: why it failed. */
  step(
    name: string,
    startedAt: number,
    attributes?: Attributes,
    error?: string,
    kind?: 'client' | 'producer',
  ): void;
  /** The document's end: `outcome` (done, failed, revoked, stopped…), `error` for a failure. */
  end(outcome: string, error?: string): void;
}

export interface DocumentTraces {
  readonly enabled: boolean;
  /** A document's span, from `startedAt`, under the `traceparent` of its event when it has one. */
  start(where: TracedRecord, startedAt: number): DocumentTrace;
  /** Sends what is buffered and stops; resolves within `timeoutMs`. */
  shutdown(timeoutMs: number): Promise<void>;
}

/** What a document span names of its input record. */
export interface TracedRecord {
  topic: string;
  partition: number;
  offset: string;
  traceparent: string | null;
  eventId: string;
  groupId?: string;
  tenant?: string | null | undefined;
  resumed?: boolean;
}

const NOOP_TRACE: DocumentTrace = {
  traceparent: null,
  step: () => undefined,
  end: () => undefined,
};

export const NO_TRACES: DocumentTraces = {
  enabled: false,
  start: () => NOOP_TRACE,
  shutdown: async () => undefined,
};

export interface TracingSettings {
  enabled: boolean;
  /** OTLP/HTTP traces endpoint; empty: the SDK's (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, OTEL_EXPORTER_OTLP_ENDPOINT, or http://localhost:4318/v1/traces). */
  endpoint: string;
  /** Share of new traces sampled (0-1); a document under a producer's trace follows its sampled flag. */
  sampleRatio: number;
  serviceName: string;
  serviceVersion: string;
}

/** The document traces of these settings: the no-op ones when tracing is off. */
export async function documentTraces(settings: TracingSettings, logger: Logger): Promise<DocumentTraces> {
  if (!settings.enabled) return NO_TRACES;
  // One after the other: they share modules (jest's ESM loader fails on concurrent links of one module).
  const api = await import('@opentelemetry/api');
  const core = await import('@opentelemetry/core');
  const sdk = await import('@opentelemetry/sdk-trace');
  const exporter = await import('@opentelemetry/exporter-trace-otlp-proto');
  const resources = await import('@opentelemetry/resources');
  const provider = new sdk.TracerProvider({
    resource: resources.resourceFromAttributes({
      'service.name': settings.serviceName,
      'service.version': settings.serviceVersion,
    }),
    sampler: new sdk.ParentBasedSampler({ root: new sdk.TraceIdRatioBasedSampler(settings.sampleRatio) }),
    spanProcessors: [
      new sdk.BatchSpanProcessor({
        exporter: new exporter.OTLPTraceExporter(settings.endpoint ? { url: settings.endpoint } : {}),
        // Spans reach the backend within about two seconds of a document's step.
        scheduledDelayMillis: 2000,
      }),
    ],
  });
  const tracer = provider.getTracer('docstream', settings.serviceVersion);
  const propagator = new core.W3CTraceContextPropagator();
  const kinds = {
    consumer: api.SpanKind.CONSUMER,
    client: api.SpanKind.CLIENT,
    producer: api.SpanKind.PRODUCER,
  };
  const errorCode = api.SpanStatusCode.ERROR;
  const parentOf = (traceparent: string | null): Context =>
    traceparent
      ? propagator.extract(api.ROOT_CONTEXT, { traceparent }, api.defaultTextMapGetter)
      : api.ROOT_CONTEXT;
  const traceparentOf = (ctx: Context): string | null => {
    const carrier: Record<string, string> = {};
    propagator.inject(ctx, carrier, api.defaultTextMapSetter);
    return carrier.traceparent ?? null;
  };
  logger.info(
    { endpoint: settings.endpoint || 'from OTEL_* variables', sampleRatio: settings.sampleRatio },
    'tracing: documents are traced over OTLP',
  );
  return {
    enabled: true,
    start: (where, startedAt) =>
      new OtelDocumentTrace(tracer, api.trace.setSpan, parentOf(where.traceparent), where, startedAt, {
        kinds,
        errorCode,
        traceparentOf,
      }),
    shutdown: async (timeoutMs) => {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        provider.shutdown().catch(() => undefined),
        new Promise((resolve) => (timer = setTimeout(resolve, timeoutMs))),
      ]);
      clearTimeout(timer);
    },
  };
}

interface OtelParts {
  kinds: { consumer: SpanKind; client: SpanKind; producer: SpanKind };
  errorCode: number;
  traceparentOf: (ctx: Context) => string | null;
}

class OtelDocumentTrace implements DocumentTrace {
  readonly traceparent: string | null;
  private readonly span: Span;
  private readonly context: Context;
  private ended = false;

  constructor(
    private readonly tracer: Tracer,
    setSpan: (ctx: Context, span: Span) => Context,
    parent: Context,
    where: TracedRecord,
    startedAt: number,
    private readonly parts: OtelParts,
  ) {
    this.span = tracer.startSpan(
      `process ${where.topic}`,
      {
        kind: parts.kinds.consumer,
        startTime: startedAt,
        attributes: {
          'messaging.system': 'kafka',
          'messaging.operation.type': 'process',
          'messaging.operation.name': 'process',
          'messaging.destination.name': where.topic,
          'messaging.destination.partition.id': String(where.partition),
          'messaging.kafka.offset': Number(where.offset),
          'messaging.message.id': where.eventId,
          ...(where.groupId ? { 'messaging.consumer.group.name': where.groupId } : {}),
          ...(where.tenant ? { 'docstream.tenant': where.tenant } : {}),
          ...(where.resumed ? { 'docstream.resumed': true } : {}),
        },
      },
      parent,
    );
    this.context = setSpan(parent, this.span);
    this.traceparent = parts.traceparentOf(this.context);
  }

  step(
    name: string,
    startedAt: number,
    attributes?: Attributes,
    error?: string,
    kind?: 'client' | 'producer',
  ): void {
    if (this.ended || !this.span.isRecording()) return;
    const span = this.tracer.startSpan(
      name,
      {
        startTime: startedAt,
        ...(attributes ? { attributes } : {}),
        ...(kind ? { kind: this.parts.kinds[kind] } : {}),
      },
      this.context,
    );
    if (error !== undefined) span.setStatus({ code: this.parts.errorCode, message: error });
    span.end();
  }

  end(outcome: string, error?: string): void {
    if (this.ended) return;
    this.ended = true;
    this.span.setAttribute('docstream.outcome', outcome);
    if (error !== undefined) this.span.setStatus({ code: this.parts.errorCode, message: error });
    this.span.end();
  }
}
