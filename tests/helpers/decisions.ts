import { randomUUID } from 'node:crypto'
import { tableNames } from '../../src/store/schema.js'
import type { AgentRunner } from '../../src/runner/contract.js'
import { finish, scriptedModel, text, toolCall, type Turn } from './ai_sdk.js'
import { readResponse } from './http.js'

/** Something with a Lucid `connection()` (a test database, or an app's `lucid.db`). */
interface Db {
  connection(): { from(table: string): any }
}

/** Every row of every package table, as JSON: a refusal must leave it exactly as it was. */
export async function tablesSnapshot(db: Db) {
  const out: Record<string, unknown[]> = {}
  for (const table of Object.values(tableNames())) {
    out[table] = await db.connection().from(table).select('*').orderByRaw('1, 2')
  }
  return JSON.stringify(out)
}

/**
 * An AI SDK 7 agent (the package's runner, the SDK's own test model) that calls `send_email`
 * (input schema `{ to: string }`, needs approval) once per entry of `calls` in one step, each
 * with that input, and after the decisions says "Sent.". Every run of the tool is recorded in
 * `ran` (its input), so a test sees whether and with what it ran. `approver` per call: who
 * may decide it (`requester` by default).
 */
export async function emailAgent(
  calls: unknown[],
  options: { approver?: (input: any) => string } = {}
): Promise<{ runner: AgentRunner; ran: unknown[] }> {
  const { tool, jsonSchema } = await import('ai')
  const { aiSdkAgent } = await import('../../src/runners/ai_sdk/index.js')
  const ran: unknown[] = []
  const first: Turn = [
    ...text('Sending. '),
    ...calls.flatMap((input, index) => toolCall(`call_${index + 1}`, 'send_email', input)),
    ...finish('tool-calls'),
  ]
  // Enough later turns for every resume a test makes.
  const later = Array.from({ length: 4 }, (): Turn => [...text('Sent.'), ...finish()])
  const model = scriptedModel([first, ...later])
  const sendEmail = tool({
    inputSchema: jsonSchema<{ to: string }>({
      type: 'object',
      properties: { to: { type: 'string' } },
      required: ['to'],
    }),
    needsApproval: true,
    execute: async (input) => {
      ran.push(input)
      return { sent: true }
    },
  })
  const approver = options.approver
  const runner = aiSdkAgent({
    model,
    tools: { send_email: sendEmail },
    ...(approver ? { approval: { approver: (call) => approver(call.input) } } : {}),
  })
  return { runner, ran }
}

/** A `RunAgentInput` with one user message (a new AG-UI run of `threadId`). */
export const aguiInput = (threadId: string, extra: Record<string, unknown> = {}) => ({
  threadId,
  runId: randomUUID(),
  messages: [{ id: 'u1', role: 'user', content: 'go' }],
  ...extra,
})

/**
 * The admin console's decision form for one item, as a browser posts it: the item page read
 * first (its CSRF cookie and token), then `fields` posted urlencoded (or `body` as is, with its
 * type). Answers the response whole (redirects not followed).
 */
export async function adminForm(base: string, item: { runId: string; itemId: string }) {
  const headers = { 'x-admin': 'yes', 'x-user': 'alice' }
  const page = await fetch(`${base}/admin/items/${item.runId}/${item.itemId}`, { headers })
  const cookie = page.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .find((c) => c.startsWith('agent_stream_csrf='))!
  const csrf = /name="agent_stream_csrf" value="([^"]+)"/.exec(await page.text())![1]
  return {
    csrf,
    async post(action: string, body: string, type = 'application/x-www-form-urlencoded') {
      const response = await fetch(`${base}/admin/items/${item.runId}/${item.itemId}/${action}`, {
        method: 'POST',
        redirect: 'manual',
        headers: { ...headers, 'cookie': cookie, 'content-type': type },
        body,
      })
      return { ...(await readResponse(response)), location: response.headers.get('location') }
    },
    /** The urlencoded form: the token, then `fields` (values encoded, as a browser does). */
    form(fields: Record<string, string>) {
      return new URLSearchParams({ agent_stream_csrf: csrf, ...fields }).toString()
    },
  }
}

/**
 * The stored `approval` frames of `runId` as a version that did not refuse edits wrote them
 * (no `inputSchema`): an edit is then accepted where it is made, so a test reaches what the
 * runner does with an edit it cannot run.
 */
export async function withoutInputSchemas(db: Db, runId: string) {
  const table = tableNames().frames
  const rows = await db.connection().from(table).where('run_id', runId).where('kind', 'approval')
  for (const row of rows) {
    const body = JSON.parse(row.body)
    delete body.inputSchema
    await db
      .connection()
      .from(table)
      .where('run_id', runId)
      .where('seq', row.seq)
      .update({ body: JSON.stringify(body) })
  }
  return rows.length
}
