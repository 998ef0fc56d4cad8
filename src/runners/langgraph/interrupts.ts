import type { ElicitationQuestion, StreamFrame, ToolConfirmation } from '../../core/frames.js'

/**
 * What a node passes to `interrupt()` to have a person approve one tool call (what
 * {@link requestApproval} sends): the call's id, its tool and its input. `description` is shown to
 * the person deciding; `inputSchema` (JSON Schema) is what an edited input is checked against
 * (`false`: the call cannot be edited, an edit is refused).
 */
export interface ToolCallInterrupt {
  toolCallId: string
  name: string
  input: Record<string, unknown>
  description?: string
  inputSchema?: Record<string, unknown> | false
}

/** LangChain's `humanInTheLoopMiddleware` request (`HITLRequest`), one interrupt for several calls. */
export interface HitlRequest {
  actionRequests: { name: string; args: Record<string, unknown>; description?: string }[]
  reviewConfigs?: {
    actionName: string
    allowedDecisions: ('approve' | 'edit' | 'reject')[]
    argsSchema?: Record<string, unknown>
  }[]
}

/** LangGraph's Agent Inbox request (`HumanInterrupt` of `@langchain/langgraph/prebuilt`). */
interface HumanInterrupt {
  action_request: { action: string; args: Record<string, unknown> }
  config?: { allow_edit?: boolean; allow_respond?: boolean }
  description?: string
}

/**
 * A person's decision on a tool call, as LangChain's `humanInTheLoopMiddleware` takes it (one per
 * action, in `{ decisions }`), and as {@link requestApproval} returns it.
 */
export type ToolDecision =
  | { type: 'approve' }
  | { type: 'edit'; editedAction: { name: string; args: Record<string, unknown> } }
  | { type: 'reject'; message?: string }

/**
 * How one parked item answers its interrupt (kept in the checkpoint): `tool` a
 * {@link ToolCallInterrupt}, `hitl` the `index`-th of a {@link HitlRequest}'s `count` actions,
 * `questions` a question set, `text` / `boolean` / `choice` a one-question interrupt.
 */
export interface ParkedInterrupt {
  interrupt: string
  as: 'tool' | 'hitl' | 'inbox' | 'questions' | 'text' | 'boolean' | 'choice'
  name?: string
  input?: unknown
  index?: number
  count?: number
  allowed?: string[]
  /** `inbox`: the request was a list (`interrupt([request])`): the resume is a list too. */
  list?: boolean
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

const asToolCall = (value: unknown): ToolCallInterrupt | null =>
  isObject(value) &&
  typeof value.toolCallId === 'string' &&
  value.toolCallId.length > 0 &&
  typeof value.name === 'string' &&
  (value.input === undefined || isObject(value.input))
    ? (value as unknown as ToolCallInterrupt)
    : null

const asHitl = (value: unknown): HitlRequest | null =>
  isObject(value) &&
  Array.isArray(value.actionRequests) &&
  value.actionRequests.length > 0 &&
  value.actionRequests.every((a) => isObject(a) && typeof a.name === 'string')
    ? (value as unknown as HitlRequest)
    : null

const isInbox = (value: unknown): value is HumanInterrupt =>
  isObject(value) &&
  isObject(value.action_request) &&
  typeof value.action_request.action === 'string' &&
  (value.action_request.args === undefined || isObject(value.action_request.args))

/** Agent Inbox requests: one `HumanInterrupt`, or a list of them. */
const asInbox = (value: unknown): { requests: HumanInterrupt[]; list: boolean } | null =>
  isInbox(value)
    ? { requests: [value], list: false }
    : Array.isArray(value) && value.length > 0 && value.every(isInbox)
      ? { requests: value, list: true }
      : null

/**
 * A question set in an interrupt's value: `{ questions: [...], preamble? }` whose questions have
 * an `id`, a `prompt` and `options` with string values; as the frame holds it (the known fields
 * only, an option's `label` defaulting to its value), or `null`.
 */
function asQuestions(
  value: unknown
): { questions: ElicitationQuestion[]; preamble?: string } | null {
  if (!isObject(value) || !Array.isArray(value.questions) || value.questions.length === 0) {
    return null
  }
  const questions: ElicitationQuestion[] = []
  for (const q of value.questions) {
    if (!isObject(q) || typeof q.id !== 'string' || typeof q.prompt !== 'string') return null
    if (
      !Array.isArray(q.options) ||
      !q.options.every((o) => isObject(o) && typeof o.value === 'string')
    ) {
      return null
    }
    const strings = (list: unknown) =>
      Array.isArray(list) && list.every((v) => typeof v === 'string') ? (list as string[]) : null
    const defaults = strings(q.defaults)
    questions.push({
      id: q.id,
      prompt: q.prompt,
      options: q.options.map((o: Record<string, unknown>) => ({
        value: o.value as string,
        label: typeof o.label === 'string' ? o.label : (o.value as string),
        ...(typeof o.hotkey === 'string' ? { hotkey: o.hotkey } : {}),
      })),
      ...(typeof q.multiple === 'boolean' ? { multiple: q.multiple } : {}),
      ...(defaults ? { defaults } : {}),
      ...(typeof q.allowFreeText === 'boolean' ? { allowFreeText: q.allowFreeText } : {}),
    })
  }
  const preamble = typeof value.preamble === 'string' && value.preamble ? value.preamble : undefined
  return { questions, ...(preamble ? { preamble } : {}) }
}

/** The words a one-question interrupt asks: its string, or its `question`/`prompt`/`message`. */
function promptOf(value: unknown): string {
  if (typeof value === 'string' && value.trim()) return value
  if (isObject(value)) {
    for (const key of ['question', 'prompt', 'message', 'description']) {
      if (typeof value[key] === 'string' && (value[key] as string).trim()) {
        return value[key] as string
      }
    }
  }
  const json = JSON.stringify(value ?? null) ?? 'null'
  return json.length > 2000 ? `${json.slice(0, 2000)}…` : json
}

/** What the approval frames of a run are asked with (approver, expiry, display copy). */
export interface LangGraphApprovalOptions {
  /** Who may decide: `'requester'` (the default) or a role; per call when a function. */
  approver?: string | ((call: { toolName: string; input: unknown }) => string)
  /** The request lapses this long after it is asked, in milliseconds. Default: never. */
  expiresInMs?: number
  /** Display copy. Default: `{ title: 'Run <toolName>?', description }` (the interrupt's). */
  confirmation?: (call: { toolName: string; input: unknown }) => ToolConfirmation
}

/** One LangGraph interrupt, as the stream and `getState()` give it. */
export interface OpenInterrupt {
  id?: string
  value?: unknown
  response_schema?: unknown
}

/**
 * The frames that ask a person for one interrupt (PURE but for the clock of `expiresAt`), and how
 * each item answers it. A value naming a tool call ({@link ToolCallInterrupt}, or each action of a
 * {@link HitlRequest}) is an `approval`, keyed by the call's id when it is known (`callIdOf`: the
 * doors link it to the call the model made), else by the interrupt id (`<id>:<n>` for the n-th
 * of several actions); anything else is an `elicitation` keyed by the interrupt id: a question
 * set as given, or one question made from the value and its `responseSchema` (a boolean: yes/no;
 * an enum of strings: its options; else free text).
 */
export function askFor(
  open: OpenInterrupt & { id: string },
  runId: string,
  approval: LangGraphApprovalOptions,
  callIdOf: (name: string, args: unknown) => string | undefined
): { id: string; frame: StreamFrame; parked: ParkedInterrupt }[] {
  const approvalFrame = (
    id: string,
    toolName: string,
    input: Record<string, unknown>,
    description: string | undefined,
    inputSchema: Record<string, unknown> | boolean | undefined
  ): StreamFrame => {
    const call = { toolName, input }
    const approver = approval.approver
    return {
      t: 'approval',
      runId,
      id,
      toolName,
      input,
      ...(isObject(inputSchema)
        ? { inputSchema: JSON.parse(JSON.stringify(inputSchema)) }
        : inputSchema === false
          ? { inputSchema: false }
          : {}),
      confirmation: approval.confirmation?.(call) ?? {
        title: `Run ${toolName}?`,
        ...(description ? { description } : {}),
      },
      approver: typeof approver === 'function' ? approver(call) : (approver ?? 'requester'),
      ...(approval.expiresInMs
        ? { expiresAt: new Date(Date.now() + approval.expiresInMs).toISOString() }
        : {}),
    }
  }
  const tool = asToolCall(open.value)
  if (tool) {
    const input = tool.input ?? {}
    return [
      {
        id: tool.toolCallId,
        frame: approvalFrame(tool.toolCallId, tool.name, input, tool.description, tool.inputSchema),
        parked: { interrupt: open.id, as: 'tool', name: tool.name, input },
      },
    ]
  }
  const hitl = asHitl(open.value)
  if (hitl) {
    const count = hitl.actionRequests.length
    return hitl.actionRequests.map((action, index) => {
      const args = isObject(action.args) ? action.args : {}
      const review = hitl.reviewConfigs?.find((r) => r.actionName === action.name)
      const id = callIdOf(action.name, args) ?? (count === 1 ? open.id : `${open.id}:${index}`)
      // A review that does not allow an edit: no input fits (an edit is refused, 422).
      const schema =
        review && !review.allowedDecisions.includes('edit') ? false : review?.argsSchema
      return {
        id,
        frame: approvalFrame(id, action.name, args, action.description, schema),
        parked: {
          interrupt: open.id,
          as: 'hitl',
          name: action.name,
          input: args,
          index,
          count,
          ...(review ? { allowed: review.allowedDecisions } : {}),
        },
      }
    })
  }
  const inbox = asInbox(open.value)
  if (inbox) {
    const count = inbox.requests.length
    return inbox.requests.map((request, index) => {
      const name = request.action_request.action
      const args = request.action_request.args ?? {}
      const id = callIdOf(name, args) ?? (count === 1 ? open.id : `${open.id}:${index}`)
      const allowed = [
        ...(request.config?.allow_edit ? ['edit'] : []),
        ...(request.config?.allow_respond ? ['respond'] : []),
      ]
      return {
        id,
        // A request that does not allow an edit: no input fits (an edit is refused, 422).
        frame: approvalFrame(
          id,
          name,
          args,
          request.description,
          allowed.includes('edit') ? undefined : false
        ),
        parked: {
          interrupt: open.id,
          as: 'inbox',
          name,
          input: args,
          index,
          count,
          allowed,
          list: inbox.list,
        },
      }
    })
  }
  const id = open.id
  const set = asQuestions(open.value)
  if (set) {
    return [
      {
        id,
        frame: {
          t: 'elicitation',
          runId,
          id,
          request: {
            id,
            source: 'ask',
            ...(set.preamble ? { preamble: set.preamble } : {}),
            questions: set.questions,
          },
        },
        parked: { interrupt: id, as: 'questions' },
      },
    ]
  }
  const schema = isObject(open.response_schema) ? open.response_schema : {}
  const choices =
    Array.isArray(schema.enum) && schema.enum.every((v) => typeof v === 'string')
      ? (schema.enum as string[])
      : null
  const as = schema.type === 'boolean' ? 'boolean' : choices ? 'choice' : 'text'
  const question: ElicitationQuestion =
    as === 'boolean'
      ? {
          id: 'answer',
          prompt: promptOf(open.value),
          options: [
            { value: 'yes', label: 'Yes' },
            { value: 'no', label: 'No' },
          ],
        }
      : as === 'choice'
        ? {
            id: 'answer',
            prompt: promptOf(open.value),
            options: choices!.map((value) => ({ value, label: value })),
          }
        : { id: 'answer', prompt: promptOf(open.value), options: [], allowFreeText: true }
  return [
    {
      id,
      frame: {
        t: 'elicitation',
        runId,
        id,
        request: { id, source: 'ask', questions: [question] },
      },
      parked: { interrupt: id, as },
    },
  ]
}
