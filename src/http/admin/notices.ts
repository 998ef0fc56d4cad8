/**
 * Notices the console shows after a decision, chosen by code (a redirect's `?notice=`), never
 * echoed from the request: a code not listed here shows nothing. A success is a status (read out
 * politely); a refusal is an alert in its own style, never the look of a success.
 */
export interface Notice {
  text: string
  /** A refusal: nothing was decided. */
  refused: boolean
}

const done = (text: string): Notice => ({ text, refused: false })
const refused = (text: string): Notice => ({ text, refused: true })

export const NOTICES: Record<string, Notice> = {
  approved: done('Approved: the run continues.'),
  rejected: done('Rejected: the call will not run.'),
  answered: done('Answered: the run continues.'),
  invalid_json: refused('The edited input is not valid JSON: nothing was decided.'),
  E_DECISION_FORBIDDEN: refused('You may not decide this item: nothing was decided.'),
  E_PARKED_NOT_FOUND: refused('This item no longer exists.'),
  E_DECISION_CONFLICT: refused('Someone decided this item first.'),
  E_DECISION_LAPSED: refused('This item expired before the decision.'),
  E_DECISION_MISMATCH: refused('That decision does not fit this item.'),
  E_INVALID_DECISION: refused(
    "The answer or the edited input breaks a rule (size, depth, options, the tool's input schema): nothing was decided."
  ),
  csrf: refused(
    'The form expired or did not come from this console: nothing was decided. Open the item again and retry.'
  ),
}
