/**
 * The agents `npm run demo -- --agent <name>` runs: each framework's runner playing the email
 * scenario (demo/agents/scenario.ts) on its own test model. `ai-sdk` (the default) is the demo's
 * full agent (demo/agent.ts).
 */
import type { AgentRunner } from '../../src/runner/contract.js'
import type { EmailAgentOptions } from './scenario.js'

/** Each `--agent` name and its module in demo/agents. */
export const FRAMEWORK_AGENTS: Record<string, string> = {
  'ai-sdk-email': 'ai_sdk',
  'langgraph': 'langgraph',
  'openai-agents': 'openai_agents',
  'agui-agent': 'agui_agent',
  'ui-message-stream': 'ui_message_stream',
  'mastra': 'mastra',
}

/** The names `--agent` takes. */
export const AGENT_NAMES = ['ai-sdk', ...Object.keys(FRAMEWORK_AGENTS)]

/** The email agent of `name`, or an error naming the names there are. */
export async function loadEmailAgent(
  name: string,
  options: EmailAgentOptions
): Promise<AgentRunner> {
  const module = FRAMEWORK_AGENTS[name]
  if (!module) {
    throw new Error(`unknown --agent "${name}": one of ${AGENT_NAMES.join(', ')}`)
  }
  const { emailAgent } = await import(`./${module}.ts`)
  return emailAgent(options)
}
