export { ATTR, errorType } from './attributes.js'
export { carrierOf, contextOf } from './carrier.js'
export { agentNameOf, type TraceOptions } from './options.js'
export {
  rootRunSpan,
  laterSegmentSpan,
  type SegmentSpan,
  type TracedOutcome,
  type TracedRun,
} from './run_spans.js'
export { recordDecidedItems, type DecidedItem } from './park_spans.js'
export { ToolSpans } from './tool_spans.js'
export { ReadSpan, tracedItems, type TracedRead } from './read_spans.js'
export { tracing } from '../otel.js'
