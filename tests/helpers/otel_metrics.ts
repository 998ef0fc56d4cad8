import { getActiveTest } from '@japa/runner'
import { metrics, type Attributes } from '@opentelemetry/api'
import {
  DataPointType,
  MeterProvider,
  MetricReader,
  type DataPoint,
  type Histogram,
  type MetricData,
} from '@opentelemetry/sdk-metrics'

/** A metric reader the test collects from when it asks (cumulative, as a Prometheus scrape). */
class OnDemandReader extends MetricReader {
  protected async onForceFlush() {}
  protected async onShutdown() {}
}

/**
 * A real MeterProvider with an on-demand reader, registered as the global one until the test
 * ends (then `metrics.disable()`).
 */
export function installMeterProvider() {
  const reader = new OnDemandReader()
  const provider = new MeterProvider({ readers: [reader] })
  metrics.setGlobalMeterProvider(provider)
  getActiveTest()?.cleanup(async () => {
    metrics.disable()
    await provider.shutdown()
  })
  /** Every metric of the package's scope, as collected now. */
  const collect = async (): Promise<MetricData[]> => {
    const { resourceMetrics, errors } = await reader.collect()
    if (errors.length > 0) throw errors[0]
    return resourceMetrics.scopeMetrics
      .filter((scope) => scope.scope.name === 'adonis-agent-stream')
      .flatMap((scope) => scope.metrics)
  }
  const points = async (name: string): Promise<DataPoint<unknown>[]> => {
    const metric = (await collect()).find((m) => m.descriptor.name === name)
    return (metric?.dataPoints ?? []) as DataPoint<unknown>[]
  }
  const matches = (point: DataPoint<unknown>, attributes: Attributes) =>
    Object.entries(attributes).every(([key, value]) => point.attributes[key] === value)
  return {
    collect,
    points,
    /** A sum's or a gauge's value over the points carrying `attributes` (0 when none). */
    async value(name: string, attributes: Attributes = {}) {
      let total = 0
      for (const point of await points(name)) {
        if (matches(point, attributes)) total += point.value as number
      }
      return total
    },
    /** A histogram's count and sum over the points carrying `attributes`. */
    async histogram(name: string, attributes: Attributes = {}) {
      const metric = (await collect()).find((m) => m.descriptor.name === name)
      let count = 0
      let sum = 0
      if (metric && metric.dataPointType === DataPointType.HISTOGRAM) {
        for (const point of metric.dataPoints) {
          if (!matches(point, attributes)) continue
          count += (point.value as Histogram).count
          sum += (point.value as Histogram).sum ?? 0
        }
      }
      return { count, sum }
    },
  }
}
