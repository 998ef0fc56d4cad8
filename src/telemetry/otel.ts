import { metrics, ProxyTracerProvider, trace, type Meter, type Tracer } from '@opentelemetry/api'

/** The instrumentation scope of every span and instrument the package makes. */
export const INSTRUMENTATION_SCOPE = 'adonis-agent-stream'

/**
 * The package's tracer, from the global tracer provider (`@opentelemetry/api`): a no-op until the
 * host registers an SDK (`@adonisjs/otel`, `@opentelemetry/sdk-node`, ...). Asked for at each use,
 * never cached, so a provider registered after the package loaded is the one used.
 */
export function tracer(): Tracer {
  return trace.getTracer(INSTRUMENTATION_SCOPE)
}

/** The package's meter, from the global meter provider: a no-op until the host registers an SDK. */
export function meter(): Meter {
  return metrics.getMeter(INSTRUMENTATION_SCOPE)
}

/** The class of the API's own no-op tracer (what a provider with no SDK behind it gives). */
const NOOP_TRACER = new ProxyTracerProvider()
  .getDelegate()
  .getTracer(INSTRUMENTATION_SCOPE).constructor

/**
 * Whether a tracer provider of an SDK is registered: without one every span is a no-op, so what
 * only a span needs (a run's stored trace context, read back from the database) is not read.
 * `true` when it cannot tell (a provider of another copy of the API).
 */
export function tracing(): boolean {
  const provider = trace.getTracerProvider()
  const delegate = provider instanceof ProxyTracerProvider ? provider.getDelegate() : provider
  return delegate.getTracer(INSTRUMENTATION_SCOPE).constructor !== NOOP_TRACER
}
