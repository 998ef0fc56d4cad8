/**
 * The email scenario every framework's demo agent plays (demo/agents/<framework>.ts), and the
 * runner conformance suite (tests/helpers/runner_conformance.ts) checks. Its model is the
 * framework's own test model, deciding each answer from the prompt it is sent (so the same agent
 * carries on after a restart or on another process):
 * - the person's newest message asks for the weekly report: "I will send it. " and a call of
 *   `send_email` with `{ to: 'team@example.com' }` (the tool needs a person's approval);
 * - the newest message is that call's result: "Sent." when the tool ran, "Not sent." when it was
 *   rejected;
 * - any other message: "You asked: " and every message of the person in its prompt, oldest
 *   first, joined by " / " (a later turn shows the earlier ones were seen).
 */
import type { Database } from '@adonisjs/lucid/database'

export interface EmailAgentOptions {
  /** The app's database (a framework that keeps state of its own keeps it there). */
  db: Database
  /** Called once per run of `send_email`, with its input. */
  onSend: (input: { to: string }) => void
}

export const EMAIL_INPUT = { to: 'team@example.com' }
export const FIRST_MESSAGE = 'Send the weekly report'

/** What the scenario's model answers, from what it reads in its prompt. */
export function answerTo(prompt: {
  /** The text of each of the person's messages in the prompt, oldest first. */
  said: string[]
  /** Set when the newest message is the tool's result: whether the email was sent. */
  toolResult?: { sent: boolean }
}): { text: string; call?: { id: string; input: { to: string } } } {
  if (prompt.toolResult) return { text: prompt.toolResult.sent ? 'Sent.' : 'Not sent.' }
  const newest = prompt.said.at(-1) ?? ''
  if (newest.includes('weekly report')) {
    return {
      text: 'I will send it. ',
      call: { id: `call_${prompt.said.length}`, input: EMAIL_INPUT },
    }
  }
  return { text: `You asked: ${prompt.said.join(' / ')}` }
}
