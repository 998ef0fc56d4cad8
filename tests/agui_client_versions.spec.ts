import { getActiveTest, test } from '@japa/runner'
import { randomUUID } from 'node:crypto'
import { request as httpRequest } from 'node:http'
import { from, lastValueFrom, toArray } from 'rxjs'
import { AGUI_MEDIA_TYPE } from '@ag-ui/proto'
import * as client57 from 'ag-ui-client-0.0.57'
import * as client58 from 'ag-ui-client-0.0.58'
import * as client59 from 'ag-ui-client-0.0.59'
import * as client100 from '@ag-ui/client'
import { EventSchema } from '@ag-ui/core/schemas'
import type { AgentRunner } from '../src/runner/contract.js'
import type { AgUiEvent } from '../src/agui/translate/index.js'
import { clientProfile, forClient } from '../src/agui/compat/index.js'
import { agUiRouteTable } from '../src/http/agui_routes.js'
import { scriptedAgent } from '../src/testing/scripted_agent.js'
import { serveDoors, TRANSPORTS, type Transport } from './helpers/transports.js'
import { parseSse, type WireEvent } from './helpers/agui.js'
import { SCENARIOS } from './helpers/scenarios.js'

/**
 * Issue 27, "every client version": the AG-UI door serves each `@ag-ui/client` version what
 * its own schema takes. Each version installed side by side (npm aliases, each with its own
 * `@ag-ui/core` and zod), driven through ITS `HttpAgent` over loopback HTTP on both transports;
 * every event it was sent passes ITS `EventSchemas` and ITS `verifyEvents`. By default (no
 * header) and with the version declared (`X-AG-UI-Client-Version`): 1.0.0 declared gets
 * `pendingToolCallIds` and the `cancelled` outcome, 0.0.59 declared the `SUBAGENT_*` events.
 */

interface Client {
  HttpAgent: any
  verifyEvents: any
  transformHttpEventStream: any
  runHttpRequest: any
  schema: { safeParse(value: unknown): { success: boolean; error?: { message: string } } }
}

const CLIENTS: Record<string, Client> = {
  '0.0.57': { ...(client57 as any), schema: client57.EventSchemas },
  '0.0.58': { ...(client58 as any), schema: client58.EventSchemas },
  '0.0.59': { ...(client59 as any), schema: client59.EventSchemas },
  '1.0.0': { ...(client100 as any), schema: EventSchema },
}

/** How a test's requests say who they are for: the door's default, or the version declared. */
const DECLARATIONS = ['default', 'declared'] as const
type Declaration = (typeof DECLARATIONS)[number]

/** What `version` declaring `declaration` is served (`src/agui/compat/profile.ts`). */
function expected(version: string, declaration: Declaration) {
  const declared = declaration === 'declared'
  return {
    whole: declared && version === '1.0.0',
    subagents: declared && version !== '0.0.57' && version !== '0.0.58',
  }
}

/** `version`'s own checks over one AG-UI run as it was sent: its schema, its verifier. */
async function assertParses(assert: any, client: Client, events: WireEvent[], what: string) {
  assert.isAbove(events.length, 1, what)
  for (const event of events) {
    const parsed = client.schema.safeParse(event)
    assert.isTrue(parsed.success, `${what}: ${event.type} ${parsed.error?.message ?? ''}`)
  }
  const verified = await lastValueFrom(from(events).pipe(client.verifyEvents(), toArray()))
  assert.lengthOf(verified, events.length, what)
}

/** A `fetch` that keeps every response body (as text) and passes it on whole. */
function keepingFetch() {
  const bodies: string[] = []
  return {
    bodies,
    last: () => parseSse(bodies.at(-1)!).map((e) => e.event),
    fetch: async (url: string, init: RequestInit) => {
      const response = await fetch(url, init)
      const text = await response.text()
      bodies.push(text)
      return new Response(text, { status: response.status, headers: response.headers })
    },
  }
}

/** One version's `HttpAgent` on the door, declaring it or not. */
function agentOf(version: string, declaration: Declaration, url: string) {
  const kept = keepingFetch()
  const headers: Record<string, string> = { 'x-user': 'alice' }
  if (declaration === 'declared') headers['X-AG-UI-Client-Version'] = version
  const agent = new CLIENTS[version].HttpAgent({
    url: `${url}/agui`,
    threadId: `t-${randomUUID()}`,
    headers,
    fetch: kept.fetch,
    initialMessages: [{ id: `u-${randomUUID()}`, role: 'user', content: 'go' }],
  })
  return { agent, kept, headers }
}

/**
 * The stored run re-attached by `version`'s own client: `GET` by run and by thread, through its
 * `transformHttpEventStream` (its decoder, its schema), as SSE, and for 1.0.0 as AG-UI protobuf
 * too (the door's protobuf is `@ag-ui/proto` 1.0's: a 0.0.x decoder cannot read
 * `TOOL_CALL_RESULT`, `REASONING_*`, `ACTIVITY_*`; its `HttpAgent` asks for SSE).
 */
async function reattachEach(
  assert: any,
  version: string,
  url: string,
  headers: Record<string, string>,
  threadId: string,
  runId: string
) {
  const client = CLIENTS[version]
  const all: WireEvent[][] = []
  for (const path of [`/agui/runs/${runId}`, `/agui/threads/${threadId}`]) {
    const accepts =
      version === '1.0.0' ? ['text/event-stream', AGUI_MEDIA_TYPE] : ['text/event-stream']
    for (const accept of accepts) {
      const events: WireEvent[] = await lastValueFrom(
        client
          .transformHttpEventStream(
            client.runHttpRequest(() => fetch(`${url}${path}`, { headers: { ...headers, accept } }))
          )
          .pipe(toArray())
      )
      await assertParses(assert, client, events, `${version} GET ${path} (${accept})`)
      all.push(events)
    }
  }
  return all
}

/** Calls the client's `confirm_color` tool when offered; answers with what came back. */
const clientToolAgent: AgentRunner = {
  async start(ctx) {
    const { tools = [], toolResults = [] } = ctx.input as any
    if (toolResults.length > 0) {
      await ctx.writer.write({ t: 'text', v: `The client said ${toolResults[0].content}.` })
      return { status: 'finished' }
    }
    await ctx.writer.write({ t: 'text', v: 'Checking with you. ' })
    if (tools.some((tool: { name: string }) => tool.name === 'confirm_color')) {
      await ctx.writer.write({
        t: 'event',
        event: {
          kind: 'tool-input-available',
          id: 'call_color',
          name: 'confirm_color',
          input: { color: 'red' },
          toolKind: 'action',
        },
      })
    }
    return { status: 'finished' }
  },
  async resume() {
    return { status: 'finished' }
  },
}

const tool = {
  name: 'confirm_color',
  description: 'Ask the person to confirm a color',
  parameters: { type: 'object', properties: { color: { type: 'string' } } },
}

const serve = async (transport: Transport, runner: AgentRunner, agui = {}) => {
  const served = await serveDoors(transport, runner, { agui })
  getActiveTest()?.cleanup(served.close)
  return served
}

test.group('AG-UI client versions: each version parses what the door serves it', () => {
  for (const version of Object.keys(CLIENTS)) {
    for (const declaration of DECLARATIONS) {
      for (const transport of TRANSPORTS) {
        const name = `${version}, ${declaration}, ${transport}`

        test(`${name}: a frontend tool call left pending, then its result`, async ({ assert }) => {
          const { url } = await serve(transport, clientToolAgent, { frontendTools: true })
          const client = CLIENTS[version]
          const { agent, kept } = agentOf(version, declaration, url)
          await agent.runAgent({ tools: [tool] })
          const first = kept.last()
          await assertParses(assert, client, first, 'the pending call')
          const call = agent.messages.flatMap((m: any) => m.toolCalls ?? [])[0]
          assert.equal(call.function.name, 'confirm_color', 'the call is visible')
          assert.deepEqual(
            first.at(-1)!.outcome,
            expected(version, declaration).whole
              ? { type: 'success', pendingToolCallIds: [call.id] }
              : { type: 'success' }
          )
          agent.messages.push({ id: 'tool-1', role: 'tool', toolCallId: call.id, content: 'red' })
          await agent.runAgent({ tools: [tool] })
          await assertParses(assert, client, kept.last(), 'the next run')
          const said = agent.messages.filter((m: any) => m.role === 'assistant').at(-1)
          assert.equal(said.content, 'The client said red.')
        })

        test(`${name}: a cancelled run with a sub-agent open`, async ({ assert }) => {
          const { url } = await serve(transport, SCENARIOS.cancelled.runner)
          const client = CLIENTS[version]
          const { agent, kept, headers } = agentOf(version, declaration, url)
          const runId = randomUUID()
          await agent.runAgent({ runId })
          const events = kept.last()
          await assertParses(assert, client, events, 'the cancelled run')
          const want = expected(version, declaration)
          const last = want.whole
            ? { outcome: { type: 'cancelled' } }
            : { outcome: undefined as unknown }
          assert.equal(events.at(-1)!.type, 'RUN_FINISHED')
          assert.deepEqual(events.at(-1)!.outcome, last.outcome)
          const types = events.map((e) => e.type)
          assert.equal(types.includes('SUBAGENT_STARTED'), want.subagents)
          for (const reread of await reattachEach(
            assert,
            version,
            url,
            headers,
            agent.threadId,
            runId
          )) {
            assert.deepEqual(reread.at(-1)!.outcome, last.outcome)
          }
        })

        test(`${name}: parked in a sub-agent's sub-agent with reasoning, resumed`, async ({
          assert,
        }) => {
          const runner = scriptedAgent({ steps: ['reasoning', 'child'], childDepth: 2 })
          const { url } = await serve(transport, runner, { reasoning: true })
          const client = CLIENTS[version]
          const { agent, kept, headers } = agentOf(version, declaration, url)
          const runId = randomUUID()
          await agent.runAgent({ runId })
          const parked = kept.last()
          await assertParses(assert, client, parked, 'the parked run')
          const types = parked.map((e) => e.type)
          assert.include(types, 'REASONING_MESSAGE_CONTENT')
          assert.equal(types.includes('SUBAGENT_STARTED'), expected(version, declaration).subagents)
          const outcome = parked.at(-1)!.outcome
          assert.equal(outcome.type, 'interrupt')
          const [interrupt] = outcome.interrupts
          await reattachEach(assert, version, url, headers, agent.threadId, runId)

          await agent.runAgent({
            runId: randomUUID(),
            resume: [
              { interruptId: interrupt.id, status: 'resolved', payload: { approved: true } },
            ],
          })
          const resumed = kept.last()
          await assertParses(assert, client, resumed, 'the resumed run')
          assert.deepEqual(resumed.at(-1)!.outcome, { type: 'success' })
        })
      }
    }
  }
})

test.group('AG-UI client versions: the declaration', () => {
  for (const transport of TRANSPORTS) {
    test(`${transport}: a header that is not a version is refused before anything runs`, async ({
      assert,
    }) => {
      let started = 0
      const runner: AgentRunner = {
        async start() {
          started++
          return { status: 'finished' }
        },
        async resume() {
          return { status: 'finished' }
        },
      }
      const { url } = await serve(transport, runner)
      const headers = {
        'content-type': 'application/json',
        'x-user': 'alice',
        'x-ag-ui-client-version': 'latest<script>',
      }
      const body = JSON.stringify({
        threadId: 't',
        runId: 'r',
        messages: [{ id: 'u', role: 'user', content: 'go' }],
      })
      for (const [method, path] of [
        ['POST', '/agui'],
        ['GET', '/agui/runs/r'],
        ['GET', '/agui/threads/t'],
      ]) {
        const response = await fetch(`${url}${path}`, {
          method,
          headers,
          body: method === 'POST' ? body : undefined,
        })
        assert.equal(response.status, 400, path)
        const refusal: any = await response.json()
        assert.equal(refusal.code, 'invalid_client_version')
        assert.notInclude(refusal.message, 'script')
      }
      assert.equal(started, 0)
    })

    test(`${transport}: a header sent twice: one version is read, two different ones are refused`, async ({
      assert,
    }) => {
      const { url } = await serve(transport, SCENARIOS.cancelled.runner)
      /** A POST whose version header is `declared`: several header lines when an array. */
      const post = (declared: string | string[]) =>
        new Promise<{ status: number; body: string }>((resolve, reject) => {
          const body = JSON.stringify({
            threadId: `t-${randomUUID()}`,
            runId: randomUUID(),
            messages: [{ id: 'u', role: 'user', content: 'go' }],
          })
          const request = httpRequest(
            `${url}/agui`,
            {
              method: 'POST',
              headers: {
                'content-type': 'application/json',
                'x-user': 'alice',
                'x-ag-ui-client-version': declared,
              },
            },
            (response) => {
              let text = ''
              response.setEncoding('utf8')
              response.on('data', (chunk) => (text += chunk))
              response.on('end', () => resolve({ status: response.statusCode!, body: text }))
              response.on('error', reject)
            }
          )
          request.on('error', reject)
          request.end(body)
        })
      // The door's default is 0.0.57: only a declared 1.0.0 gets the `cancelled` outcome.
      for (const declared of [['1.0.0', '1.0.0'], '1.0.0, 1.0.0', ['1.0.0', 'v1.0.0-rc.1']]) {
        const answer = await post(declared)
        assert.equal(answer.status, 200, String(declared))
        const events = parseSse(answer.body).map((e) => e.event)
        assert.deepEqual(events.at(-1)!.outcome, { type: 'cancelled' }, String(declared))
      }
      for (const declared of [['0.0.59', '1.0.0'], '1.0.0,0.0.57', ['1.0.0', 'latest<script>']]) {
        const answer = await post(declared)
        assert.equal(answer.status, 400, String(declared))
        const refusal = JSON.parse(answer.body)
        assert.equal(refusal.code, 'invalid_client_version')
        assert.notInclude(refusal.message, 'script')
        assert.notInclude(refusal.message, '0.0.59')
      }
      assert.include(
        JSON.parse((await post(['0.0.59', '1.0.0'])).body).message,
        'more than once with different versions'
      )
    })

    test(`${transport}: the door's clientVersion is the default; a request's header wins`, async ({
      assert,
    }) => {
      const { url } = await serve(transport, SCENARIOS.cancelled.runner, {
        clientVersion: '1.0.0',
      })
      const post = async (headers: Record<string, string>) =>
        parseSse(
          await (
            await fetch(`${url}/agui`, {
              method: 'POST',
              headers: { 'content-type': 'application/json', 'x-user': 'alice', ...headers },
              body: JSON.stringify({
                threadId: `t-${randomUUID()}`,
                runId: randomUUID(),
                messages: [{ id: 'u', role: 'user', content: 'go' }],
              }),
            })
          ).text()
        ).map((e) => e.event)
      assert.deepEqual((await post({})).at(-1)!.outcome, { type: 'cancelled' })
      const old = await post({ 'X-AG-UI-Client-Version': '0.0.58' })
      assert.notProperty(old.at(-1)!, 'outcome')
      assert.notInclude(
        old.map((e) => e.type),
        'SUBAGENT_STARTED'
      )
    })
  }
})

test.group('AG-UI client versions: the profile and the one rule (pure)', () => {
  test('a version picks what it parses; anything else is no version', ({ assert }) => {
    const of = (version: string) => {
      const profile = clientProfile(version)
      return (
        profile && [profile.subagentEvents, profile.cancelledOutcome, profile.pendingToolCallIds]
      )
    }
    assert.deepEqual(of('0.0.40'), [false, false, false])
    assert.deepEqual(of('0.0.57'), [false, false, false])
    assert.deepEqual(of('0.0.58'), [false, false, false])
    assert.deepEqual(of('0.0.59'), [true, false, false])
    assert.deepEqual(of('v0.0.60-rc.1'), [true, false, false])
    assert.deepEqual(of(' 1.0.0 '), [true, true, true])
    assert.deepEqual(of('1.2.3+build.7'), [true, true, true])
    for (const bad of [
      '',
      '1',
      '1.0',
      'latest',
      '1.0.0.0',
      '1.0.x',
      '9999999.0.0',
      '1.0.0-<script>',
    ]) {
      assert.isNull(clientProfile(bad), bad)
    }
  })

  test('a door whose clientVersion is no version is refused when its routes are made', ({
    assert,
  }) => {
    const door = { options: { clientVersion: 'newest' } } as any
    assert.throws(() => agUiRouteTable(door, null as any), '"agui.clientVersion" must be a version')
  })

  test('forClient: what changes is mapped; anything else is the same object', ({ assert }) => {
    const old = clientProfile('0.0.57')!
    const whole = clientProfile('1.0.0')!
    const pending = {
      type: 'RUN_FINISHED',
      threadId: 't',
      runId: 'r',
      outcome: { type: 'success', pendingToolCallIds: ['c'] },
    } as AgUiEvent
    assert.deepEqual(forClient(pending, old), {
      type: 'RUN_FINISHED',
      threadId: 't',
      runId: 'r',
      outcome: { type: 'success' },
    } as AgUiEvent)
    assert.strictEqual(forClient(pending, whole), pending)
    const cancelled = { ...pending, outcome: { type: 'cancelled' } } as AgUiEvent
    assert.deepEqual(forClient(cancelled, old), {
      type: 'RUN_FINISHED',
      threadId: 't',
      runId: 'r',
    } as AgUiEvent)
    assert.strictEqual(forClient(cancelled, whole), cancelled)
    const started = { type: 'SUBAGENT_STARTED', subagentRunId: 's', name: 'n' } as AgUiEvent
    assert.isNull(forClient(started, old))
    assert.strictEqual(forClient(started, clientProfile('0.0.59')!), started)
    const interrupt = {
      type: 'RUN_FINISHED',
      threadId: 't',
      runId: 'r',
      outcome: { type: 'interrupt', interrupts: [{ id: 'i', reason: 'tool_call' }] },
    } as AgUiEvent
    assert.strictEqual(forClient(interrupt, old), interrupt)
    // Nothing is changed in place: the stored translation is shared by every reader.
    assert.deepEqual((pending as any).outcome, { type: 'success', pendingToolCallIds: ['c'] })
  })
})
