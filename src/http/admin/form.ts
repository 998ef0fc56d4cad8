import vine from '@vinejs/vine'
import type { ElicitationRequest } from '../../core/frames.js'
import { InvalidDecisionError, issuesOf } from '../../errors.js'
import { REPLY_LIMITS } from '../../parking/replies.js'
import { textTooDeep } from '../../core/json_depth.js'

/**
 * How the admin page's answer form encodes a question set, and back. Field names carry no id
 * and values carry no option value: a question is named by its position (`q0`, `q1`, ...), an
 * option by its position (`o0`, `o1`, ...), free text goes in `q<n>_text`. The bodyparser's form
 * syntax (`a.b`, `a[b]`, trimming, empty strings read as null) then cannot change which question
 * or option is meant, whatever characters an id or a value holds. The question set is the stored
 * one (a park's request never changes), read back when the form is posted.
 */

/** The field of the question at `index`; `_text` appended for its free text. */
export const questionField = (index: number) => `q${index}`

/** The value that picks the option at `index`. */
export const optionToken = (index: number) => `o${index}`

/** A form value as a list of strings (a repeated field is an array; anything else is dropped). */
const strings = (value: unknown): string[] =>
  (Array.isArray(value) ? value : [value]).filter((v): v is string => typeof v === 'string')

/**
 * The answers a posted form gives, `{ [questionId]: values }`, with only the questions the form
 * sent (an absent one then takes its defaults). Empty free text adds no value.
 *
 * @throws InvalidDecisionError (`option`) for a token that picks no option of the question
 */
export function answersFromForm(
  body: Record<string, unknown>,
  request: ElicitationRequest
): Record<string, string[]> {
  const answers: Record<string, string[]> = {}
  request.questions.forEach((question, index) => {
    const field = questionField(index)
    const picked = strings(body[field]).map((token) => {
      const match = /^o(\d{1,4})$/.exec(token)
      const option = match ? question.options[Number(match[1])] : undefined
      if (!option) throw new InvalidDecisionError([{ field: 'answers', rule: 'option' }])
      return option.value
    })
    const textField = `${field}_text`
    const text = strings(body[textField]).filter((v) => v.length > 0)
    // A question the form sent (a free-text field always is, even empty) is answered, maybe
    // with none; one it did not send takes its defaults.
    if (Object.hasOwn(body, field) || Object.hasOwn(body, textField)) {
      answers[question.id] = [...picked, ...text]
    }
  })
  return answers
}

/** The decision fields of the admin page's form (urlencoded: every field a string). */
const formValidator = vine.compile(
  vine
    .object({
      /** The park the card showed: a whole number from 1, written in decimal digits only. */
      park: vine
        .string()
        .regex(/^[1-9][0-9]{0,9}$/)
        .optional(),
      reason: vine.string().maxLength(REPLY_LIMITS.reasonChars).optional(),
    })
    // The CSRF token and the answer fields (`q<n>`, `q<n>_text`) are read elsewhere.
    .allowUnknownProperties()
)

/** A decision form's `park` and `reason` once validated, as parking's decisions take them. */
export interface DecisionForm {
  park?: number
  reason?: string
}

/**
 * Validate an admin decision form (VineJS) before anything is looked up: `park` in decimal
 * digits (no sign, no fraction, no exponent), a `reason` of at most 2000 characters. A blank
 * reason counts as none. The answers are decoded against the stored question set
 * ({@link answersFromForm}).
 *
 * @throws InvalidDecisionError naming the field and rule, never the value
 */
export async function validateDecisionForm(body: unknown): Promise<DecisionForm> {
  let out: Awaited<ReturnType<typeof formValidator.validate>>
  try {
    out = await formValidator.validate(body ?? {})
  } catch (error) {
    const issues = issuesOf(error)
    if (!issues) throw error
    throw new InvalidDecisionError(issues)
  }
  const reason = typeof out.reason === 'string' ? out.reason.trim() : ''
  return {
    ...(out.park === undefined ? {} : { park: Number(out.park) }),
    ...(reason ? { reason } : {}),
  }
}

export const UNCHANGED = Symbol('unchanged')
export const INVALID_JSON = Symbol('invalid json')

/**
 * The input an approve form carries: the parsed JSON when the person changed it, UNCHANGED
 * when it equals what was asked (`asked` reads the stored item; or no field was sent),
 * INVALID_JSON when it does not parse. The depth rule is checked on the text first (nothing
 * parses or compares a value nested deeper than `MAX_JSON_DEPTH`); the decisions validate an
 * edit like the API's (`validateDecision`: size, depth, Unicode, the tool's input schema).
 *
 * @throws InvalidDecisionError (`maxDepth` on `input`)
 */
export async function editedInput(
  field: unknown,
  asked: () => Promise<{ input?: unknown } | null>
): Promise<unknown> {
  if (typeof field !== 'string') return UNCHANGED
  if (textTooDeep(field)) throw new InvalidDecisionError([{ field: 'input', rule: 'maxDepth' }])
  let parsed: unknown
  try {
    parsed = JSON.parse(field)
  } catch {
    return INVALID_JSON
  }
  const item = await asked()
  if (item && JSON.stringify(parsed) === JSON.stringify(item.input)) return UNCHANGED
  return parsed
}
