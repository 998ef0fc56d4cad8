import { test } from '@japa/runner'
import { OpenTelemetry } from '@ai-sdk/otel'
import { setupRunner } from './helpers/parking.js'
import { runId } from './helpers/sink.js'
import { installTracing } from './helpers/tracing.js'
import { finish, scriptedModel, text } from './helpers/ai_sdk.js'
import { aiSdkAgent } from '../src/runners/ai_sdk/index.js'

/**
 * Issue 25: the model calls of an `aiSdkAgent` run are child spans of its segment, made by the
 * AI SDK's own telemetry (`@ai-sdk/otel`, handed to `streamText` through the runner's options),
 * not by the package.
 */
test.group("Traces | the AI SDK's own spans under the segment", () => {
  test("a model call traced by @ai-sdk/otel is a child of the run's invoke_agent span", async ({
    assert,
    cleanup,
  }) => {
    const tracing = installTracing()
    cleanup(() => tracing.uninstall())
    const model = scriptedModel([[...text('Hello there.'), ...finish()]])
    const { driver } = await setupRunner(
      aiSdkAgent({
        model,
        // The AI SDK's OpenTelemetry integration, for this agent only; the prompt and the answer
        // are the host's to keep out of its spans.
        telemetry: {
          integrations: [new OpenTelemetry()],
          recordInputs: false,
          recordOutputs: false,
        },
      } as Parameters<typeof aiSdkAgent>[0])
    )
    const id = runId('ai-sdk-otel')
    const { done } = await driver.start({ runId: id, input: 'Say hello' })
    assert.equal((await done).status, 'finished')
    const spans = tracing.spans()
    const root = spans.find((span) => span.name === 'invoke_agent agent')
    assert.exists(root, 'the run root span')
    // Every span the AI SDK made (its call and its model step) is in the run's trace, under it.
    const sdk = spans.filter((span) => span !== root && span.traceId === root!.traceId)
    assert.isAbove(sdk.length, 0, spans.map((span) => span.name).join(', '))
    const ids = new Set(spans.map((span) => span.spanId))
    for (const span of sdk) assert.isTrue(ids.has(span.parentSpanId!), span.name)
    assert.isTrue(sdk.some((span) => span.parentSpanId === root!.spanId))
    // The model call itself (`chat <model>`, the GenAI conventions' name), under the AI SDK's step.
    assert.isTrue(sdk.some((span) => span.name.startsWith('chat ')))
    assert.notInclude(JSON.stringify(sdk.map((span) => span.attributes)), 'Hello there.')
  })
})
