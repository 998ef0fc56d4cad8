import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { randomUUID } from 'node:crypto'
import { rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { HttpAgent } from '@ag-ui/client'
import {
  CopilotRuntime,
  InMemoryAgentRunner,
  createCopilotRuntimeHandler,
} from '@copilotkit/runtime/v2'
import { createCopilotNodeHandler } from '@copilotkit/runtime/v2/node'
import { CopilotKitCore, ɵInterruptState } from '@copilotkit/core'
import { startDemo } from '../../../demo/server.ts'
import { scriptedDemoModel } from '../../../demo/agent.ts'
import { AgentStreamRunner } from '../../../src/copilotkit/index.ts'
import { heldModel } from './held_model.ts'

process.env.COPILOTKIT_TELEMETRY_DISABLED = 'true'
// CopilotKitCore does nothing without a `window` (its SSR guard): the smallest one it needs.
;(globalThis as any).window ??= globalThis

/**
 * The demo app on a free port and a private SQLite file, its scripted model in `heldModel`
 * (`held`: the answers it held, the prompts it was sent).
 */
export async function demo(options: { tokensPerSecond?: number } = {}) {
  const dbFile = join(tmpdir(), `agent-stream-ck-${randomUUID()}.sqlite3`)
  const held = heldModel(scriptedDemoModel(options.tokensPerSecond ?? 30))
  const started = await startDemo({ port: 0, quiet: true, dbFile, model: held.model })
  return {
    ...started,
    agui: `${started.url}/agent/agui`,
    held,
    async stop() {
      held.release()
      await started.stop()
      for (const suffix of ['', '-wal', '-shm']) rmSync(`${dbFile}${suffix}`, { force: true })
    },
  }
}

/**
 * CopilotKit's runtime in this process, as the README sets it up: the demo's AG-UI route as
 * the `assistant` agent, the package's runner (or CopilotKit's in-memory one, to compare).
 */
export async function copilotRuntime(
  agui: string,
  runner: 'package' | 'memory' = 'package',
  page: Record<string, { type: string; body: string }> = {}
) {
  const runtime = new CopilotRuntime({
    agents: { assistant: new HttpAgent({ url: agui }) },
    // The package's runner fits CopilotKit's AgentRunner as it is (checked by this file's types).
    runner: runner === 'package' ? new AgentStreamRunner({ url: agui }) : new InMemoryAgentRunner(),
  })
  const handler = createCopilotNodeHandler(
    createCopilotRuntimeHandler({ runtime, basePath: '/api/copilotkit' })
  )
  // The chat page's files, when given, on the same origin as the runtime.
  const server: Server = createServer((request, response) => {
    const file = page[new URL(request.url!, 'http://x').pathname]
    if (!file) return (handler as any)(request, response)
    response.writeHead(200, { 'content-type': file.type }).end(file.body)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    origin,
    url: `${origin}/api/copilotkit`,
    async stop() {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}

/** A headless CopilotKit client (what `<CopilotKit runtimeUrl>` creates) on one thread. */
export async function copilotClient(runtimeUrl: string, threadId: string) {
  const core = new CopilotKitCore({ runtimeUrl })
  for (let i = 0; i < 200 && !core.getAgent('assistant'); i++) {
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
  const agent = core.getAgent('assistant')
  if (!agent) throw new Error('the runtime has no assistant agent')
  agent.threadId = threadId
  /** The run id each open interrupt came with (what `useInterrupt` records). */
  const interruptRunIds = new Map<string, string>()
  const interrupts = new ɵInterruptState()
  const events: any[] = []
  agent.subscribe({
    onEvent: ({ event }: any) => void events.push(event),
    onRunStartedEvent: () => {
      interruptRunIds.clear()
      interrupts.clear()
    },
    onRunFinishedEvent: (params: any) => {
      if (params.outcome === 'interrupt') {
        for (const interrupt of params.interrupts)
          interruptRunIds.set(interrupt.id, params.input.runId)
        interrupts.setStandard(params.interrupts)
      }
    },
  } as any)
  return {
    core,
    agent,
    events,
    interrupts,
    send(text: string) {
      agent.addMessage({ id: randomUUID(), role: 'user', content: text } as any)
      return core.runAgent({ agent })
    },
    connect() {
      return core.connectAgent({ agent })
    },
    /**
     * `useInterrupt`'s resolve()/cancel() (react-core 1.74, `useInterrupt`), step for step, with
     * CopilotKit's own decision logic (`ɵInterruptState`): the tool messages it adds, then the
     * resume under the interrupted run's id.
     */
    async decide(how: { payload: unknown } | 'cancel') {
      const decision: any = how === 'cancel' ? interrupts.cancel() : interrupts.resolve(how.payload)
      if (decision.kind !== 'resume') throw new Error(`decision: ${decision.kind}`)
      const runId = decision.resume
        .map((entry: any) => interruptRunIds.get(entry.interruptId))
        .find((id: string | undefined) => id !== undefined)
      for (const result of decision.toolResults) {
        agent.addMessage({
          id: randomUUID(),
          role: 'tool',
          toolCallId: result.toolCallId,
          content: result.content,
        } as any)
      }
      return core.runAgent({ agent, resume: decision.resume, ...(runId ? { runId } : {}) })
    },
  }
}

/** A reply to a question set built from its `responseSchema`: each question's first option. */
export function firstOptions(interrupt: any) {
  const questions = interrupt.responseSchema.properties.answers.properties
  const answers: Record<string, string[]> = {}
  for (const [id, question] of Object.entries<any>(questions)) {
    if (question.items.enum) answers[id] = [question.items.enum[0]]
  }
  return { answers }
}

/** Wait until `check()` is true (the run goes on in the background). */
export async function until(check: () => boolean, what: string, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

/** The messages as `[role, text]` (a tool message's content, an assistant's text). */
export const transcript = (messages: any[]) =>
  messages.map((m) => [m.role, typeof m.content === 'string' ? m.content : ''])
