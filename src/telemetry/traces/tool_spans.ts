import { context, SpanKind, SpanStatusCode, type Span } from '@opentelemetry/api'
import { tracer } from '../otel.js'
import { ATTR } from './attributes.js'

/**
 * `execute_tool <name>` spans of the tool executions a runner makes (the AI SDK's
 * `onToolExecutionStart` / `onToolExecutionEnd`): each a child of the active context (the
 * segment's span), with `gen_ai.tool.name` and `gen_ai.tool.call.id`, never the input or output.
 */
export class ToolSpans {
  #open = new Map<string, Span>()

  /** A tool's execution began. */
  start(toolName: string, toolCallId: string) {
    const span = tracer().startSpan(
      `execute_tool ${toolName}`,
      {
        kind: SpanKind.INTERNAL,
        attributes: {
          [ATTR.operationName]: 'execute_tool',
          [ATTR.toolName]: toolName,
          [ATTR.toolCallId]: toolCallId,
        },
      },
      context.active()
    )
    this.#open.get(toolCallId)?.end()
    this.#open.set(toolCallId, span)
  }

  /** A tool's execution ended; `failed` with its error's stable type (`tool_error` by default). */
  end(toolCallId: string, failed: boolean, errorType = 'tool_error') {
    const span = this.#open.get(toolCallId)
    if (!span) return
    this.#open.delete(toolCallId)
    if (failed) {
      span.setAttribute(ATTR.errorType, errorType)
      span.setStatus({ code: SpanStatusCode.ERROR })
    }
    span.end()
  }

  /** End what is still open (the segment ended first: aborted, `aborted` as its error type). */
  endAll() {
    for (const id of [...this.#open.keys()]) this.end(id, true, 'aborted')
  }
}
