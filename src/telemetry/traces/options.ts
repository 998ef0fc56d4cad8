/**
 * What the host sets about the package's spans (config `telemetry`).
 */
export interface TraceOptions {
  /**
   * `gen_ai.agent.name` and the `invoke_agent <name>` span name. Default: the runner's `name`,
   * else `'agent'`.
   */
  agentName?: string
  /**
   * Put the run's principal id on its root span as `enduser.id`. Default `false`: the person is
   * never in a span unless the host opts in.
   */
  enduserId?: boolean
}

/**
 * The agent's one name (`telemetry.agentName`, else the runner's `name`, else `'agent'`): in its
 * spans (`gen_ai.agent.name`) and in every webhook payload (`agent`).
 */
export function agentNameOf(options: TraceOptions | undefined, runnerName?: string): string {
  return options?.agentName ?? runnerName ?? 'agent'
}
