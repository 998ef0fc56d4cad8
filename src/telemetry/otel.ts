import { metrics, trace, type Meter, type Tracer } from '@opentelemetry/api'

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
