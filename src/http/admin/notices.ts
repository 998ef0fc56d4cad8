/**
 * Notices the console shows after a decision, chosen by code (a redirect's `?notice=`), never
 * echoed from the request: a code not listed here shows nothing.
 */
export const NOTICES: Record<string, string> = {
  approved: 'Approved: the run continues.',
  rejected: 'Rejected: the call will not run.',
  answered: 'Answered: the run continues.',
  invalid_json: 'The edited input is not valid JSON: nothing was decided.',
  E_DECISION_FORBIDDEN: 'You may not decide this item.',
  E_PARKED_NOT_FOUND: 'This item no longer exists.',
  E_DECISION_CONFLICT: 'Someone decided this item first.',
  E_DECISION_LAPSED: 'This item expired before the decision.',
  E_DECISION_MISMATCH: 'That decision does not fit this item.',
  E_INVALID_DECISION:
    'The answer or the edited input breaks a rule (size, depth, options): nothing was decided.',
  csrf: 'The form expired or did not come from this console: nothing was decided. Open the item again and retry.',
}
