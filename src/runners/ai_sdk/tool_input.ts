import { asSchema, type Tool } from 'ai'
import type { StreamFrame } from '../../core/frames.js'
import { schemaIssue } from '../../core/json_schema.js'
import type { SettledItem } from '../../parking/types.js'

/**
 * The JSON Schema of a tool's input, as the AI SDK gives it (`asSchema(tool.inputSchema)
 * .jsonSchema`: a Zod schema, `jsonSchema()`, a Standard Schema), or `undefined` for a tool
 * without one (or one the SDK cannot convert). What the `approval` frame carries as
 * `inputSchema`, so an edit is checked against it where it is made.
 */
export async function toolInputSchema(
  tool: Tool | undefined
): Promise<Record<string, unknown> | boolean | undefined> {
  if (!tool?.inputSchema) return undefined
  try {
    const schema: unknown = await asSchema(tool.inputSchema).jsonSchema
    if (typeof schema === 'boolean') return schema
    if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) return undefined
    // JSON only (a converter may leave `undefined` members, which a frame does not store).
    return JSON.parse(JSON.stringify(schema)) as Record<string, unknown>
  } catch {
    return undefined
  }
}

/**
 * The frames a resume writes for approved calls whose input (a person's edit, or the model's
 * own) does not fit the tool's declared schema, checked with the package's one validator before
 * the AI SDK could run them (a decision is checked when it is made; this holds for one stored
 * before that check, or a tool whose schema changed): one `tool-output-error` per such call,
 * naming the field and rule, never the value. Such a call does not run; the model gets the
 * error as the call's result, as the AI SDK gives an invalid call's.
 */
export async function invalidApprovedInputs(
  stored: StreamFrame[],
  items: SettledItem[],
  tools: Record<string, Tool>
): Promise<{ id: string; frame: StreamFrame }[]> {
  const names = new Map<string, string>()
  for (const frame of stored) if (frame.t === 'approval') names.set(frame.id, frame.toolName)
  const out: { id: string; frame: StreamFrame }[] = []
  for (const item of items) {
    if (item.kind !== 'approval' || item.status !== 'approved') continue
    const name = names.get(item.id)
    const tool = name !== undefined && Object.hasOwn(tools, name) ? tools[name] : undefined
    const schema = await toolInputSchema(tool)
    if (schema === undefined) continue
    const issue = schemaIssue(schema, item.input ?? {}, 'input')
    if (!issue) continue
    const error = `Invalid input for tool ${name}: "${issue.field}" fails the "${issue.rule}" rule`
    out.push({
      id: item.id,
      frame: { t: 'event', event: { kind: 'tool-output-error', id: item.id, error } },
    })
  }
  return out
}
