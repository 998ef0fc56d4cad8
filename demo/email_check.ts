/**
 * `npm run demo -- --agent <name> --check`: the email scenario (demo/agents/scenario.ts) against
 * the demo app running a framework's agent, with the official clients: `HttpAgent` (approved
 * from the chat with `resume[]`), the admin page's approve form, `useChat`'s own transport
 * (approved, then a second turn that shows the first was seen). It throws, naming the step, on
 * anything unexpected.
 */
import { randomUUID } from 'node:crypto'
import { rmSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { HttpAgent, buildResumeArray, type Message } from '@ag-ui/client'
import { PREFIX, startDemo } from './server.js'
import { approveInAdmin, CheckFailed, expect } from './check_steps.js'
import { headlessChat, textOf } from './headless_chat.js'

const said = (messages: Message[]) => JSON.stringify(messages)

export async function runEmailCheck(
  agent: string,
  { log = console.log as (line: string) => void, timeoutMs = 60_000 } = {}
) {
  const dbFile = fileURLToPath(
    new URL(`tmp/check-${process.pid}-${randomUUID().slice(0, 8)}.sqlite3`, import.meta.url)
  )
  const demo = await startDemo({ port: 0, quiet: true, dbFile, agent })
  const base = `${demo.url}${PREFIX}`
  log(`demo app at ${demo.url} running ${agent}`)
  let timer: NodeJS.Timeout | undefined
  const steps = async () => {
    const client = new HttpAgent({
      url: `${base}/agui`,
      threadId: `check-${randomUUID()}`,
      initialMessages: [{ id: 'u1', role: 'user', content: 'Send the weekly report' }],
    })
    await client.runAgent()
    expect(said(client.messages).includes('I will send it.'), 'AG-UI: no "I will send it."')
    expect(client.pendingInterrupts.length === 1, 'AG-UI: the run did not ask one approval')
    log('AG-UI: the agent asked to run send_email')
    const [interrupt] = client.pendingInterrupts
    await client.runAgent({
      resume: buildResumeArray(client.pendingInterrupts, {
        [interrupt.id]: { status: 'resolved', payload: { approved: true } },
      }),
    })
    expect(said(client.messages).includes('Sent.'), 'AG-UI: no "Sent." after the approval')
    log('AG-UI: approved from the chat, "Sent."')

    const other = new HttpAgent({
      url: `${base}/agui`,
      threadId: `check-${randomUUID()}`,
      initialMessages: [{ id: 'u1', role: 'user', content: 'Send the weekly report' }],
    })
    await other.runAgent()
    expect(other.pendingInterrupts.length === 1, 'admin: the run did not ask one approval')
    const [item] = await demo.agentStream.parking.queries.list({ threadId: other.threadId })
    expect(item, 'admin: nothing pending')
    await approveInAdmin(base, item.runId)
    await demo.agentStream.driver.settled()
    log('admin page: approved, the run resumed')

    const chat = headlessChat(base, `check-${randomUUID()}`)
    const asked = await chat.send('Send the weekly report')
    expect(textOf(asked).includes('I will send it.'), 'useChat: no "I will send it."')
    const sent = await chat.answerApprovals(true)
    expect(textOf(sent).includes('Sent.'), 'useChat: no "Sent." after the approval')
    const next = await chat.send('What did I ask?')
    expect(
      textOf(next).includes('Send the weekly report / What did I ask?'),
      'useChat: the second turn did not see the first'
    )
    log(`useChat: approved, then "${textOf(next)}"`)
  }
  try {
    await Promise.race([
      steps(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new CheckFailed(`timed out after ${timeoutMs} ms`)),
          timeoutMs
        )
      }),
    ])
  } finally {
    clearTimeout(timer)
    await demo.stop()
    for (const suffix of ['', '-wal', '-shm']) rmSync(`${dbFile}${suffix}`, { force: true })
  }
}
