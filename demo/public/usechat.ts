/**
 * The demo's `useChat` page: React, `useChat` from `@ai-sdk/react` with the AI SDK's own
 * `DefaultChatTransport`, against the package's UI message stream door (`<prefix>/chat`).
 * Bundled with esbuild when the demo starts (`demo/bundle.ts`); no JSX, so it type-checks with
 * the package. The chat id lives in the URL (`?chat=`), so a reload resumes the same chat: the
 * stored messages come from `GET <prefix>/chat/<id>/messages` (`useChat({ messages })`, the
 * person's own included), and `resume: true` asks `GET <prefix>/chat/<id>/stream` for the turn in
 * flight.
 */
import { createElement as h, useEffect, useState, type ReactNode } from 'react'
import { createRoot } from 'react-dom/client'
import { useChat } from '@ai-sdk/react'
import {
  DefaultChatTransport,
  isToolUIPart,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  type UIMessage,
} from 'ai'
import { createDurableChatTransport } from '@durable-streams/aisdk-transport'
import { csrfHeaders } from './csrf.js'

const params = new URLSearchParams(location.search)
const chatId = params.get('chat') ?? crypto.randomUUID()
if (!params.has('chat')) history.replaceState(null, '', `?chat=${chatId}`)
const api = document.body.dataset.api ?? '/agent/chat'
/** How often a page that shows an open ask checks for a decision made elsewhere; 0: never. */
const recheckMs = Number(document.body.dataset.recheckMs ?? 5000)
/** What the door does with a message sent while a turn talks; none: the door's (`enqueue`). */
const multitaskStrategy = document.body.dataset.multitaskStrategy
/**
 * The Durable Streams transport's `api` (`<prefix>/ds/chat`): the page then reads each answer
 * as a Durable Stream (`@durable-streams/aisdk-transport`); none: the door's own SSE answers.
 */
const durableApi = document.body.dataset.durableApi

/** Stop the turn (the chat's stop route: the run ends, what was said stays), then the request. */
async function stopChat(stop: () => void | Promise<void>) {
  await fetch(`${api}/${encodeURIComponent(chatId)}/stop`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...csrfHeaders() },
    body: JSON.stringify({ mode: 'keep' }),
  })
  await stop()
}

type Part = UIMessage['parts'][number] & Record<string, any>

function Questions({ part, answer }: { part: Part; answer: (output: unknown) => void }) {
  const request = part.input as { preamble?: string; questions: any[] }
  const [values, setValues] = useState<Record<string, string>>({})
  return h(
    'form',
    {
      'className': 'questions',
      'aria-label': 'Questions',
      'onSubmit': (event: { preventDefault(): void }) => {
        event.preventDefault()
        const answers: Record<string, string[]> = {}
        for (const [id, value] of Object.entries(values)) if (value) answers[id] = [value]
        answer({ answers })
      },
    },
    h('p', null, request.preamble ?? 'Questions'),
    ...request.questions.map((q) =>
      h(
        'label',
        { key: q.id },
        `${q.prompt} `,
        q.options.length > 0
          ? h(
              'select',
              {
                name: q.id,
                value: values[q.id] ?? q.defaults?.[0] ?? '',
                onChange: (e: any) => setValues({ ...values, [q.id]: e.target.value }),
              },
              ...q.options.map((o: any) => h('option', { key: o.value, value: o.value }, o.label))
            )
          : h('input', {
              name: q.id,
              onChange: (e: any) => setValues({ ...values, [q.id]: e.target.value }),
            })
      )
    ),
    h('button', { type: 'submit' }, 'Answer')
  )
}

function App({ stored }: { stored: UIMessage[] }) {
  const [input, setInput] = useState('')
  const chat = useChat({
    id: chatId,
    messages: stored,
    resume: true,
    // Behind @adonisjs/shield, every POST carries the page's CSRF token (none without shield).
    // A message sent while a turn talks carries the page's policy in the body, if it has one.
    transport: durableApi
      ? createDurableChatTransport({ api: durableApi, headers: csrfHeaders() })
      : new DefaultChatTransport({
          api,
          headers: csrfHeaders,
          ...(multitaskStrategy ? { body: { multitaskStrategy } } : {}),
        }),
    // addToolApprovalResponse sends the answer on its own once every approval has one.
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  })
  const { messages, status, error } = chat
  // Someone may decide elsewhere (the admin page, another tab, the expiry) while this page shows
  // an ask: sendMessage() with no message sends the chat as it is, and the door answers with the
  // turn from its asks on (nothing new yet, or what was decided and the rest of the answer).
  const asking =
    status === 'ready' &&
    (messages.at(-1)?.parts ?? []).some(
      (part) =>
        isToolUIPart(part) &&
        (part.state === 'approval-requested' ||
          (part.type === 'dynamic-tool' && part.state === 'input-available'))
    )
  useEffect(() => {
    if (!asking || recheckMs <= 0) return
    const timer = setInterval(() => void chat.sendMessage(), recheckMs)
    return () => clearInterval(timer)
  }, [asking, chat.sendMessage])

  function partView(part: Part, key: number): ReactNode {
    if (part.type === 'text') return h('span', { key, className: 'text' }, part.text)
    if (part.type === 'dynamic-tool' && part.toolName === 'elicitation') {
      if (part.state !== 'input-available')
        return h('p', { key, className: 'answered' }, 'Answered.')
      return h(Questions, {
        key,
        part,
        answer: async (output) => {
          await chat.addToolOutput({
            tool: 'elicitation',
            toolCallId: part.toolCallId,
            output,
          } as any)
          await chat.sendMessage()
        },
      })
    }
    if (!part.type.startsWith('tool-')) return null
    const name = part.type.slice(5)
    const state = String(part.state)
    return h(
      'div',
      { key, 'className': 'tool', 'data-state': state },
      h('code', null, `${name}(${JSON.stringify(part.input ?? {})})`),
      ' ',
      state === 'output-available' ? `-> ${JSON.stringify(part.output)}` : null,
      state === 'output-denied' ? h('em', null, 'denied') : null,
      state === 'approval-requested'
        ? h(
            'span',
            { className: 'approval' },
            h(
              'button',
              {
                onClick: () =>
                  chat.addToolApprovalResponse({ id: part.approval.id, approved: true }),
              },
              'Approve'
            ),
            h(
              'button',
              {
                onClick: () =>
                  chat.addToolApprovalResponse({ id: part.approval.id, approved: false }),
              },
              'Reject'
            )
          )
        : null
    )
  }

  return h(
    'main',
    null,
    h('header', null, h('h1', null, 'useChat demo'), h('span', { id: 'status' }, status)),
    h(
      'div',
      { id: 'log' },
      ...messages.map((m) =>
        h(
          'div',
          { 'key': m.id, 'className': m.role, 'data-id': m.id },
          ...(m.parts as Part[]).map(partView)
        )
      )
    ),
    error ? h('p', { role: 'alert' }, error.message) : null,
    h(
      'form',
      {
        onSubmit: (event: { preventDefault(): void }) => {
          event.preventDefault()
          if (!input.trim()) return
          void chat.sendMessage({ text: input })
          setInput('')
        },
      },
      h('input', {
        'id': 'message',
        'aria-label': 'Message',
        'value': input,
        'onChange': (e: any) => setInput(e.target.value),
      }),
      // A message may be sent while a turn talks: the door's policy says what becomes of it.
      h('button', { type: 'submit', disabled: status === 'submitted' }, 'Send'),
      h(
        'button',
        {
          type: 'button',
          disabled: status !== 'submitted' && status !== 'streaming',
          onClick: () => void stopChat(chat.stop),
        },
        'Stop'
      )
    )
  )
}

// The chat's stored messages (404 for a chat that has none yet: a new one).
const response = await fetch(`${api}/${encodeURIComponent(chatId)}/messages`)
const stored: UIMessage[] = response.ok ? await response.json() : []
createRoot(document.getElementById('root')!).render(h(App, { stored }))
