import type { ElicitationRequest } from '../../core/frames.js'

/**
 * The reply schemas an interrupt advertises (`responseSchema`, JSON Schema draft 2020-12): one
 * definition per reply shape, read by the client and, through a JSON Schema validator, by the
 * door that checks a resume (`src/agui/door/reply_check.ts`).
 */

/**
 * The JSON Schema of an approval's reply (`tool_call` interrupt's `responseSchema`):
 * `{ approved: boolean, reason?: string (at most 2000 characters), editedArgs?: object }`;
 * `editedArgs` replaces the call's arguments whole (docs/design.md, "Interrupts").
 */
export const APPROVAL_RESPONSE_SCHEMA: Record<string, unknown> = Object.freeze({
  type: 'object',
  properties: Object.freeze({
    approved: Object.freeze({ type: 'boolean' }),
    reason: Object.freeze({ type: 'string', maxLength: 2000 }),
    editedArgs: Object.freeze({ type: 'object' }),
  }),
  required: Object.freeze(['approved']),
  additionalProperties: false,
})

/** An approval reply, as {@link APPROVAL_RESPONSE_SCHEMA} describes it. */
export interface ApprovalReply {
  approved: boolean
  reason?: string
  editedArgs?: Record<string, unknown>
}

/**
 * The JSON Schema (draft 2020-12) of a question set's reply, as an `input_required` interrupt's
 * `responseSchema`: `{ answers: { [questionId]: string[] }, skipped? }` (docs/design.md,
 * "Question sets").
 */
export function questionSetSchema(request: ElicitationRequest): Record<string, unknown> {
  const properties: Record<string, unknown> = {}
  for (const question of request.questions) {
    const values: Record<string, unknown> = { type: 'string' }
    if (!question.allowFreeText) values.enum = question.options.map((o) => o.value)
    properties[question.id] = {
      type: 'array',
      title: question.prompt,
      items: values,
      ...(question.multiple ? {} : { maxItems: 1 }),
      ...(question.defaults ? { default: question.defaults } : {}),
    }
  }
  return {
    type: 'object',
    properties: {
      answers: { type: 'object', properties, additionalProperties: false },
      skipped: { type: 'boolean' },
    },
    additionalProperties: false,
  }
}
