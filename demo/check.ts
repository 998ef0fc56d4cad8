/**
 * The demo's non-interactive mode (`npm run demo -- --check`): one whole scenario against the
 * demo app with the official AG-UI client (`HttpAgent` from `@ag-ui/client`), printing each step.
 * It throws, naming the step, on anything unexpected, and gives up after `timeoutMs`.
 */
import { randomUUID } from 'node:crypto'
import { rmSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { type HttpAgent, buildResumeArray, type Message } from '@ag-ui/client'
import { PREFIX, startDemo, type Demo } from './server.js'
import { cuttingFetch, parseSse } from './cutting_fetch.js'
import { ReattachingAgent } from './reattaching_agent.js'
import { useChatScenario, type UseChatReport } from './usechat_check.js'
import { approveInAdmin, CheckFailed, expect } from './check_steps.js'

export interface CheckOptions {
  /** Where each step is printed. Default `console.log`. */
  log?: (line: string) => void
  /** Fail after this long. Default 60 s. */
  timeoutMs?: number
}

/** What the scenario saw, for tests. */
export interface CheckReport {
  runId: string
  /** Everything the AG-UI client holds as assistant text at the end. */
  clientText: string
  /** The text of the last AG-UI run (after the question set). */
  finalText: string
  /** Text of the segment the admin's approval resumed, as the client saw it. */
  continuationText: string
  /** How the door answered the client's resume of the approval the admin had decided. */
  approvalResume: 'refused' | 'accepted'
  refusalCode?: string
  /** The same scenario through the useChat door (`usechat_check.ts`). */
  useChat?: UseChatReport
}

const assistantText = (messages: Message[]) =>
  messages
    .filter((m) => m.role === 'assistant' && typeof m.content === 'string')
    .map((m) => m.content as string)
    .join('')

const toolCalls = (messages: Message[]) =>
  messages.flatMap((m) => (m.role === 'assistant' ? (m.toolCalls ?? []) : []))

/** How many interrupts the client holds (a function: the client changes it under TypeScript). */
const pendingCount = (agent: HttpAgent) => agent.pendingInterrupts.length

const toolResult = (messages: Message[], toolCallId: string) => {
  const message = messages.find((m) => m.role === 'tool' && m.toolCallId === toolCallId)
  return message && typeof message.content === 'string' ? message.content : undefined
}

/**
 * Re-attach by thread (`GET <prefix>/agui/threads/:threadId?after=`) through `connect()`, until
 * the door serves the run's continuation: right after a decision the run may not have reopened
 * its stream yet, and the thread's current run is still the one that parked (replayed as
 * `RUN_STARTED` + `RUN_FINISHED` again): read again a moment later.
 */
async function attachThread(
  client: ReattachingAgent,
  wire: ReturnType<typeof cuttingFetch>,
  parkedRunId: string,
  after: string,
  log: (line: string) => void
) {
  for (let attempt = 1; attempt <= 100; attempt++) {
    // The client still holds the interrupt the admin answered; its pre-flight would refuse.
    client.pendingInterrupts = []
    client.lastEventId = after
    await client.connectAgent()
    const [started] = wire.events()
    expect(started?.type === 'RUN_STARTED', `attach: expected RUN_STARTED, got ${started?.type}`)
    if (started.runId !== parkedRunId) {
      const url = new URL(wire.urls.at(-1)!)
      log(
        `re-attached by thread: GET ${url.pathname}${url.search} -> RUN_STARTED ${started.runId}` +
          (attempt > 1 ? ` (attempt ${attempt})` : '')
      )
      return
    }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new CheckFailed('attach: the thread never moved past the parked run')
}

/** The last SSE id of response `i`: where the client was when that response ended. */
const lastIdOf = (wire: ReturnType<typeof cuttingFetch>, i: number) =>
  parseSse(wire.bodies[i]).findLast((e) => e.id)?.id

/** Where response `i` went, as a path and query. */
const pathOf = (wire: ReturnType<typeof cuttingFetch>, i: number) => {
  const url = new URL(wire.urls[i])
  return `${url.pathname}${url.search}`
}

async function scenario(demo: Demo, log: (line: string) => void): Promise<CheckReport> {
  const base = `${demo.url}${PREFIX}`
  const wire = cuttingFetch()
  const client = new ReattachingAgent({
    url: `${base}/agui`,
    fetch: wire.fetch,
    initialMessages: [{ id: 'u1', role: 'user', content: 'Send the weekly report' }],
  })

  // 1. A run, cut mid-message (the socket is aborted after the second text delta), then again
  //    inside one stored frame's events (right after the search call's TOOL_CALL_ARGS). The
  //    client notices each stream ended without RUN_FINISHED and re-attaches by thread.
  const runId = randomUUID()
  let deltas = 0
  const cutInsideFrame = (e: { type: string }) => e.type === 'TOOL_CALL_ARGS'
  wire.state.cutWhen = (e) => {
    if (e.type !== 'TEXT_MESSAGE_CONTENT' || ++deltas !== 2) return false
    wire.state.cutWhen = cutInsideFrame
    return true
  }
  const firstRequest = wire.bodies.length
  await client.runAgent({ runId })
  const first = wire.events(firstRequest)
  expect(first[0]?.type === 'RUN_STARTED', `run: expected RUN_STARTED, got ${first[0]?.type}`)
  log(`run started: POST ${PREFIX}/agui, runId ${runId}`)
  expect(deltas === 2, 'run: the stream ended before the cut')
  expect(!first.some((e) => e.type === 'RUN_FINISHED'), 'run: finished before the cut')
  expect(wire.bodies.length === firstRequest + 3, `run: ${wire.bodies.length} responses, not 3`)
  const cutAt = lastIdOf(wire, firstRequest)
  expect(cutAt, 'run: no SSE id before the cut')
  log(`cut mid-message at ${cutAt}`)
  const again = wire.events(firstRequest + 1)
  expect(
    again[0]?.type === 'RUN_STARTED' && again[0].runId === runId,
    `re-attach: expected RUN_STARTED ${runId}, got ${JSON.stringify(again[0])}`
  )
  const reopened = again.find((e) => e.type === 'TEXT_MESSAGE_START')
  log(
    `re-attached: GET ${pathOf(wire, firstRequest + 1)} -> RUN_STARTED` +
      (reopened ? `, TEXT_MESSAGE_START ${reopened.messageId} re-opened` : '') +
      ', the rest of the run'
  )
  const cutInside = lastIdOf(wire, firstRequest + 1)
  expect(
    wire.events(firstRequest + 1).at(-1)?.type === 'TOOL_CALL_ARGS' && cutInside?.includes(':'),
    `cut inside a frame: expected TOOL_CALL_ARGS with an id inside its frame, got ${cutInside}`
  )
  log(
    `cut inside a frame at ${cutInside} (after TOOL_CALL_ARGS): re-attached, GET ${pathOf(wire, firstRequest + 2)}`
  )
  const text = assistantText(client.messages)
  expect(
    text === 'Let me look at this week. Revenue was 42. ',
    `re-attach: the text is ${JSON.stringify(text)} (lost or doubled deltas)`
  )
  const search = toolCalls(client.messages).find((c) => c.function.name === 'search')
  expect(search, 'run: no search tool call')
  expect(
    search.function.arguments === '{"q":"weekly numbers"}',
    `re-attach: search arguments ${search.function.arguments} (lost or doubled)`
  )
  log(`tool call: search ${search.function.arguments} -> ${toolResult(client.messages, search.id)}`)
  expect(pendingCount(client) === 1, 'run: expected one interrupt')
  const approval = client.pendingInterrupts[0]
  const call = toolCalls(client.messages).find((c) => c.id === approval.toolCallId)
  expect(
    approval.reason === 'tool_call' && call?.function.name === 'send_email',
    `run: expected a tool_call interrupt on send_email, got ${JSON.stringify(approval)}`
  )
  log(`interrupt: tool_call send_email ${call.function.arguments} ("${approval.message}")`)
  const parkedAt = client.lastEventId!

  // 3. The person approves on the admin page, not in the chat.
  const admin = await approveInAdmin(base, runId)
  log(
    `approved via admin: POST ${admin.action} (CSRF cookie + agent_stream_csrf) -> 303 ${admin.location}`
  )

  // 4. The client sends its own answer to the interrupt the admin decided.
  await client.runAgent({
    runId: randomUUID(),
    resume: buildResumeArray(client.pendingInterrupts, {
      [approval.id]: { status: 'resolved', payload: { approved: true } },
    }),
  })
  const afterApproval = wire.events()
  let report: Pick<CheckReport, 'approvalResume' | 'refusalCode'>
  if (afterApproval[0]?.type === 'RUN_ERROR') {
    const code = String(afterApproval[0].code)
    expect(code === 'interrupt_decided', `client resume of the approval: refused with ${code}`)
    report = { approvalResume: 'refused', refusalCode: code }
    log(`client resume of the approval: refused (${code}): the admin decided it`)
    // The run went on without the client: attach by thread to see the continuation, which the
    // door serves as an AG-UI run of its own. The interrupt was answered elsewhere: drop it.
    await attachThread(client, wire, runId, parkedAt, log)
  } else {
    report = { approvalResume: 'accepted' }
    expect(
      afterApproval[0]?.type === 'RUN_STARTED',
      `client resume of the approval: expected RUN_STARTED, got ${afterApproval[0]?.type}`
    )
    log('client resume of the approval: accepted, the run continues in its stream')
  }
  const continued = wire.events()
  const result = continued.find(
    (e) => e.type === 'TOOL_CALL_RESULT' && e.toolCallId === approval.toolCallId
  )
  expect(result, 'resumed: no result for send_email')
  const continuationText = continued
    .filter((e) => e.type === 'TEXT_MESSAGE_CONTENT')
    .map((e) => e.delta)
    .join('')
  expect(continuationText === 'Sent. ', `resumed: text ${JSON.stringify(continuationText)}`)
  log(`resumed: send_email -> ${result.content}, "${continuationText}", then a question set`)
  expect(pendingCount(client) === 1, 'resumed: expected one interrupt')
  const question = client.pendingInterrupts[0]
  expect(
    question.reason === 'input_required',
    `resumed: expected a question set, got ${JSON.stringify(question)}`
  )
  log(`interrupt: input_required "${question.message}"`)

  // 5. The client answers the question set through AG-UI; mid-message the server ends every
  //    open AG-UI response, as it does when it shuts down: no RUN_FINISHED, the client
  //    re-attaches.
  const answer = buildResumeArray(client.pendingInterrupts, {
    [question.id]: { status: 'resolved', payload: { answers: { format: ['csv'] } } },
  })
  const finalRunId = randomUUID()
  const before = client.messages.length
  let ended = false
  wire.state.cutWhen = (e) => {
    if (e.type === 'TEXT_MESSAGE_CONTENT' && !ended) {
      ended = true
      demo.agentStream.http.closeAll()
    }
    return false
  }
  const resumeRequest = wire.bodies.length
  await client.runAgent({ runId: finalRunId, resume: answer })
  wire.state.cutWhen = null
  const resumed = wire.events(resumeRequest)
  expect(
    resumed[0]?.type === 'RUN_STARTED' && resumed[0].runId === finalRunId,
    `resume: expected RUN_STARTED, got ${JSON.stringify(resumed[0])}`
  )
  log(`resumed: POST ${PREFIX}/agui with resume[] (format: csv) -> RUN_STARTED ${finalRunId}`)
  expect(ended, 'resume: the stream ended before the server ended it')
  expect(!resumed.some((e) => e.type === 'RUN_FINISHED'), 'resume: finished before the end')
  log(
    `the server ended the stream mid-message at ${lastIdOf(wire, resumeRequest)} (as on shutdown)`
  )
  const tail = wire.events()
  const end = tail.at(-1)
  expect(
    tail[0]?.type === 'RUN_STARTED' && tail[0].runId === finalRunId,
    're-attach: expected RUN_STARTED'
  )
  expect(
    end?.type === 'RUN_FINISHED' && end.outcome?.type === 'success',
    `re-attach: expected RUN_FINISHED success, got ${JSON.stringify(end)}`
  )
  log(`re-attached: GET ${pathOf(wire, wire.bodies.length - 1)} -> RUN_FINISHED success`)
  const finalText = assistantText(client.messages.slice(before))
  expect(
    finalText === 'Format: csv. All done.',
    `finish: the last run's text is ${JSON.stringify(finalText)}`
  )
  expect(pendingCount(client) === 0, 'finish: interrupts still pending')
  log(`finished: "${finalText}"`)
  return {
    runId,
    clientText: assistantText(client.messages),
    continuationText,
    finalText,
    ...report,
  }
}

/** Boot the demo on a free port with its own database, run the scenario, stop the demo. */
export async function runCheck(options: CheckOptions = {}): Promise<CheckReport> {
  const print = options.log ?? ((line: string) => console.log(line))
  let lastStep = '(none)'
  const log = (line: string) => {
    lastStep = line
    print(line)
  }
  const timeoutMs = options.timeoutMs ?? 60_000
  const dbFile = fileURLToPath(
    new URL(`tmp/check-${process.pid}-${randomUUID().slice(0, 8)}.sqlite3`, import.meta.url)
  )
  // HttpAgent 1.0.0 rethrows a cut socket's teardown as an unhandled rejection
  // (docs/design.md, "HttpAgent 1.0 quirks").
  const ignoreTeardown = (reason: unknown) => {
    const error = reason as Error | undefined
    if (error?.name === 'AbortError' || error?.message === 'terminated') return
    console.error('check: unhandled rejection', reason)
    process.exitCode = 1
  }
  process.on('unhandledRejection', ignoreTeardown)
  const demo = await startDemo({ port: 0, quiet: true, dbFile, model: 'scripted' })
  log(`demo app at ${demo.url} (SQLite ${dbFile})`)
  let timer: NodeJS.Timeout | undefined
  try {
    return await Promise.race([
      (async () => {
        const report = await scenario(demo, log)
        return { ...report, useChat: await useChatScenario(demo, log) }
      })(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new CheckFailed(`timed out after ${timeoutMs} ms; last step: ${lastStep}`)),
          timeoutMs
        )
      }),
    ])
  } finally {
    clearTimeout(timer)
    await demo.stop()
    for (const suffix of ['', '-wal', '-shm']) rmSync(`${dbFile}${suffix}`, { force: true })
    // Late teardown rejections of the cut sockets land after the scenario: keep the filter a moment.
    setTimeout(() => process.off('unhandledRejection', ignoreTeardown), 1000).unref()
  }
}
