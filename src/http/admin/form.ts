import vine from '@vinejs/vine'
import { InvalidDecisionError, issuesOf } from '../../errors.js'

const text = () => vine.string().maxLength(2000)

/** The admin page's decision form (urlencoded): what a browser posts, every field a string. */
const formValidator = vine.compile(
  vine.object({
    /** The park the card showed: a whole number from 1, written in decimal digits only. */
    park: vine
      .string()
      .regex(/^[1-9][0-9]{0,9}$/)
      .optional(),
    reason: text().optional(),
    /** `answers[<questionId>][]`: one value, or several. */
    answers: vine.record(vine.unionOfTypes([text(), vine.array(text()).maxLength(100)])).optional(),
  })
)

/** A decision form once validated, as the parking service takes it. */
export interface DecisionForm {
  park?: number
  reason?: string
  answers: Record<string, string[]>
}

/**
 * Validate an admin decision form (VineJS) before anything is looked up: `park` in decimal
 * digits (no sign, no fraction, no exponent), a `reason` of at most 2000 characters, `answers`
 * as values per question. A blank reason counts as none; empty values are dropped.
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
  const answers: Record<string, string[]> = {}
  for (const [id, values] of Object.entries(out.answers ?? {})) {
    answers[id] = (Array.isArray(values) ? values : [values]).filter((v) => v.length > 0)
  }
  const reason = out.reason?.trim()
  return {
    ...(out.park === undefined ? {} : { park: Number(out.park) }),
    ...(reason ? { reason } : {}),
    answers,
  }
}
