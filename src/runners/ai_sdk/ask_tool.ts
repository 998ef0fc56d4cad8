import { jsonSchema, tool, type Tool } from 'ai'

/** Tools made by {@link askTool}: a call to one parks the run on a question set. */
const asking = new WeakSet<object>()

/** Whether `value` is a tool made by {@link askTool}. */
export const isAskTool = (value: unknown): boolean =>
  typeof value === 'object' && value !== null && asking.has(value)

/** What the model passes to an asking tool: the question set (docs/design.md, "Question sets"). */
export interface AskInput {
  preamble?: string
  questions: {
    id: string
    prompt: string
    options: { value: string; label: string }[]
    multiple?: boolean
    defaults?: string[]
    allowFreeText?: boolean
  }[]
}

/** What the tool call returns once a person answered (the model gets it as the tool's result). */
export interface AskOutput {
  answers: Record<string, string[]>
  skipped: boolean
}

const schema = jsonSchema<AskInput>({
  type: 'object',
  additionalProperties: false,
  required: ['questions'],
  properties: {
    preamble: { type: 'string', description: 'One sentence before the questions.' },
    questions: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['id', 'prompt', 'options'],
        properties: {
          id: { type: 'string', description: 'Unique in the set; answers come back under it.' },
          prompt: { type: 'string' },
          options: {
            type: 'array',
            items: {
              type: 'object',
              additionalProperties: false,
              required: ['value', 'label'],
              properties: { value: { type: 'string' }, label: { type: 'string' } },
            },
          },
          multiple: { type: 'boolean' },
          defaults: { type: 'array', items: { type: 'string' } },
          allowFreeText: { type: 'boolean' },
        },
      },
    },
  },
})

/**
 * A tool through which the model asks the person a question set. It has no `execute`: a call
 * makes the runner write an `elicitation` frame (the call's id is the item id) and park the
 * run; a person answers from any door or the admin page; on resume the answers
 * (`{ answers: Record<questionId, string[]>, skipped }`, defaults filled in) are the call's
 * result and the loop goes on. Put it in `tools` under any name.
 *
 * @param options.description what the model is told the tool is for
 */
export function askTool(options: { description?: string } = {}): Tool<AskInput, never> {
  const made = tool({
    description:
      options.description ??
      'Ask the user a short set of multiple-choice questions and wait for the answers.',
    inputSchema: schema,
  })
  asking.add(made)
  return made
}
