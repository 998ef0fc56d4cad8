// The demo's chat page: AG-UI 1.0 over fetch + SSE, in plain browser JavaScript, no build step.
// Every value from the server goes into the page as text (textContent), never as markup.

const AGENT = '/agent'
/** Refusals that mean someone answered the interrupt first (on the admin page, say). */
const ANSWERED_ELSEWHERE = new Set([
  'interrupt_decided',
  'no_pending_interrupt',
  'unknown_interrupt',
  'decision_conflict',
])

const threadId = crypto.randomUUID()
/** The messages a `RunAgentInput` carries (the server keeps the real history). */
const history = []
/** What is on the page, by AG-UI id: a re-attach re-opens a message or a tool call by its id. */
const texts = new Map()
const tools = new Map()
/** Runs that reached RUN_FINISHED here. */
const finishedRuns = new Set()
/** The last SSE `id:` received: where a re-attach starts (one stream per thread run). */
let lastId
/** The notes under the forms of the last answer sent, to correct if someone answered first. */
let sentNotes = []

const log = document.querySelector('#log')
const statusLine = document.querySelector('#status')
const composer = document.querySelector('#composer')

function el(tag, className, text) {
  const node = document.createElement(tag)
  if (className) node.className = className
  if (text !== undefined) node.textContent = text
  return node
}

function show(node) {
  log.append(node)
  node.scrollIntoView({ block: 'end' })
}

function setStatus(text) {
  statusLine.textContent = text
}

function busy(on) {
  for (const control of composer.elements) control.disabled = on
}

function fail(message) {
  show(el('p', 'error', message))
  setStatus('The run stopped.')
  busy(false)
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
/** This page reads AG-UI 1.0 whole (the `cancelled` outcome, `SUBAGENT_*`): it says so. */
const AG_UI_1_0 = { 'x-ag-ui-client-version': '1.0.0' }
const get = (path) => fetch(path, { headers: { accept: 'text/event-stream', ...AG_UI_1_0 } })

/** The SSE events of a response: `{ event, id }` per `data:` block (blocks end with a blank line). */
async function* readSse(response) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader()
  let buffer = ''
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) return
      buffer += value
      let end
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end)
        buffer = buffer.slice(end + 2)
        let id
        const data = []
        for (const line of block.split('\n')) {
          if (line.startsWith('id:')) id = line.slice(3).trim()
          else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''))
        }
        if (data.length > 0) yield { event: JSON.parse(data.join('\n')), id }
      }
    }
  } finally {
    reader.cancel().catch(() => {})
  }
}

const isEnd = (event) => event.type === 'RUN_FINISHED' || event.type === 'RUN_ERROR'

/**
 * Read one AG-UI run to its end. The events of one stored frame are applied together when the
 * `id:` that closes them arrives, so a drop never leaves half a frame applied and a re-attach
 * from the last id repeats nothing. After a drop (a network error, or a body that ends before
 * RUN_FINISHED / RUN_ERROR) it re-attaches, `GET /agui/runs/<runId>?after=<lastId>`, with backoff.
 * With `skipFinished`, a run this page already finished is not applied again: returns 'stale'.
 */
async function follow(open, { runId, skipFinished = false } = {}) {
  let responded = false
  for (let attempt = 0; attempt <= 8; attempt++) {
    if (attempt > 0) {
      setStatus(`Connection lost: re-attaching (attempt ${attempt})…`)
      await sleep(Math.min(250 * 2 ** (attempt - 1), 4000))
    }
    let batch = []
    try {
      const reattach = responded && runId
      const after = lastId ? `?after=${encodeURIComponent(lastId)}` : ''
      const response = await (reattach
        ? get(`${AGENT}/agui/runs/${encodeURIComponent(runId)}${after}`)
        : open())
      responded = true
      if (!response.ok) {
        if (response.status >= 500) continue
        const body = await response.json().catch(() => ({}))
        return fail(body.message ?? `HTTP ${response.status}`)
      }
      for await (const { event, id } of readSse(response)) {
        if (event.type === 'RUN_STARTED') {
          if (skipFinished && finishedRuns.has(event.runId)) return 'stale'
          runId = event.runId
        }
        batch.push(event)
        if (id === undefined) continue
        lastId = id
        attempt = 0
        const ended = batch.some(isEnd)
        for (const item of batch) apply(item)
        batch = []
        if (ended) return
      }
      // The body ended: only a refusal (one RUN_ERROR) ends without an id; else it was a drop.
      if (batch.some(isEnd)) return batch.forEach(apply)
    } catch (error) {
      console.warn('agent stream:', error)
    }
  }
  fail('The connection is lost: reload the page.')
}

function apply(event) {
  switch (event.type) {
    case 'RUN_STARTED':
      setStatus('The agent is working…')
      break
    case 'TEXT_MESSAGE_START':
      textFor(event.messageId)
      break
    case 'TEXT_MESSAGE_CONTENT':
      textFor(event.messageId).textContent += event.delta
      break
    case 'TEXT_MESSAGE_END': {
      const content = textFor(event.messageId).textContent
      if (!history.some((m) => m.id === event.messageId))
        history.push({ id: event.messageId, role: 'assistant', content })
      break
    }
    case 'TOOL_CALL_START':
      toolFor(event.toolCallId, event.toolCallName)
      break
    case 'TOOL_CALL_ARGS':
      toolFor(event.toolCallId).args.textContent += event.delta
      break
    case 'TOOL_CALL_RESULT': {
      const content = event.content
      toolFor(event.toolCallId).result.textContent =
        typeof content === 'string' ? content : JSON.stringify(content)
      break
    }
    case 'RUN_FINISHED':
      finishedRuns.add(event.runId)
      if (event.outcome?.type === 'interrupt') ask(event.outcome.interrupts)
      else {
        setStatus(event.outcome?.type === 'cancelled' ? 'Cancelled.' : 'Done.')
        busy(false)
      }
      break
    case 'RUN_ERROR':
      if (ANSWERED_ELSEWHERE.has(event.code)) {
        for (const note of sentNotes) note.textContent = 'Someone answered first.'
        catchUp()
      } else fail(event.message)
      break
  }
}

function textFor(messageId) {
  if (!texts.has(messageId)) {
    const bubble = el('p', 'assistant', '')
    bubble.dataset.messageId = messageId
    texts.set(messageId, bubble)
    show(bubble)
  }
  return texts.get(messageId)
}

function toolFor(toolCallId, name = 'tool') {
  if (!tools.has(toolCallId)) {
    const line = el('p', 'tool')
    line.dataset.toolCallId = toolCallId
    const tool = { line, args: el('code', 'args', ''), result: el('code', 'result', '') }
    line.append('🔧 ', el('strong', 'name', name), ' ', tool.args, ' → ', tool.result)
    tools.set(toolCallId, tool)
    show(line)
  }
  return tools.get(toolCallId)
}

/** Start a run or a resume: POST a RunAgentInput, read its stream. */
function run(extra) {
  busy(true)
  const input = {
    threadId,
    runId: crypto.randomUUID(),
    messages: history,
    tools: [],
    context: [],
    state: {},
    forwardedProps: {},
    ...extra,
  }
  const open = () =>
    fetch(`${AGENT}/agui`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'accept': 'text/event-stream',
        ...AG_UI_1_0,
      },
      body: JSON.stringify(input),
    })
  return follow(open, { runId: input.runId })
}

/**
 * Someone answered first (the admin page): the run went on without this page. The thread's
 * current run is `GET /agui/threads/<threadId>`; right after the decision it may still be the
 * run that parked, which this page has: try again a moment later.
 */
async function catchUp() {
  setStatus('Answered elsewhere: catching up…')
  for (let attempt = 0; attempt < 20; attempt++) {
    const after = lastId ? `?after=${encodeURIComponent(lastId)}` : ''
    const open = () => get(`${AGENT}/agui/threads/${encodeURIComponent(threadId)}${after}`)
    if ((await follow(open, { skipFinished: true })) !== 'stale') return
    await sleep(250)
  }
  fail('The run did not continue.')
}

/** Inline forms for a run's interrupts; the resume goes when every one is answered. */
function ask(interrupts) {
  setStatus('The agent is waiting for you.')
  const answers = new Map()
  const notes = []
  for (const interrupt of interrupts) {
    const { form, read } =
      interrupt.reason === 'tool_call' ? approvalForm(interrupt) : questionForm(interrupt)
    form.className = 'interrupt'
    form.addEventListener('submit', (event) => {
      event.preventDefault()
      const { payload, summary } = read(event.submitter)
      for (const control of form.elements) control.disabled = true
      const note = el('p', 'answered', summary)
      form.append(note)
      notes.push(note)
      answers.set(interrupt.id, payload)
      if (answers.size < interrupts.length) return
      sentNotes = notes
      run({
        resume: [...answers].map(([interruptId, payload]) => ({
          interruptId,
          status: 'resolved',
          payload,
        })),
      })
    })
    show(form)
  }
}

function approvalForm(interrupt) {
  const form = el('form')
  const name = tools.get(interrupt.toolCallId)?.line.querySelector('.name').textContent
  form.append(el('strong', '', interrupt.message ?? 'Approve this tool call?'))
  if (name) form.append(' ', el('code', '', name))
  const buttons = el('p')
  for (const [value, label] of [
    ['approve', 'Approve'],
    ['reject', 'Reject'],
  ]) {
    const button = el('button', '', label)
    button.type = 'submit'
    button.value = value
    buttons.append(button)
  }
  form.append(buttons)
  return {
    form,
    read: (submitter) => {
      const approved = submitter?.value === 'approve'
      return { payload: { approved }, summary: approved ? 'Approved.' : 'Rejected.' }
    },
  }
}

/** A question set from its `responseSchema`: `answers.<id>` arrays, an enum gives choices. */
function questionForm(interrupt) {
  const form = el('form')
  form.append(el('strong', '', interrupt.message ?? 'The agent has questions.'))
  const questions = interrupt.responseSchema?.properties?.answers?.properties ?? {}
  for (const [id, schema] of Object.entries(questions)) {
    const fieldset = el('fieldset')
    fieldset.append(el('legend', '', schema.title ?? id))
    const choices = schema.items?.enum
    if (choices) {
      for (const value of choices) {
        const input = el('input')
        input.type = schema.maxItems === 1 ? 'radio' : 'checkbox'
        input.name = id
        input.value = value
        input.checked = Array.isArray(schema.default) && schema.default.includes(value)
        const label = el('label')
        label.append(input, ` ${value} `)
        fieldset.append(label)
      }
    } else {
      const input = el('input')
      input.type = 'text'
      input.name = id
      input.setAttribute('aria-label', schema.title ?? id)
      fieldset.append(input)
    }
    form.append(fieldset)
  }
  const submit = el('button', '', 'Answer')
  submit.type = 'submit'
  form.append(submit)
  return {
    form,
    read: () => {
      const answers = {}
      for (const [id, schema] of Object.entries(questions)) {
        const fields = [...form.elements].filter((field) => field.name === id)
        answers[id] = schema.items?.enum
          ? fields.filter((field) => field.checked).map((field) => field.value)
          : fields.map((field) => field.value.trim()).filter(Boolean)
      }
      const summary = Object.entries(answers)
        .filter(([, values]) => values.length > 0)
        .map(([id, values]) => `${id}: ${values.join(', ')}`)
        .join('; ')
      return { payload: { answers }, summary: `Answered (${summary || 'defaults'}).` }
    },
  }
}

composer.addEventListener('submit', (event) => {
  event.preventDefault()
  const text = composer.elements.message.value.trim()
  if (!text) return
  composer.elements.message.value = ''
  const message = { id: crypto.randomUUID(), role: 'user', content: text }
  history.push(message)
  show(el('p', 'user', text))
  // A new message starts a new stream: cursors of the previous one mean nothing there.
  lastId = undefined
  run({})
})
