import { Ajv, type Options, type ValidateFunction } from 'ajv'
import { Ajv2019 } from 'ajv/dist/2019.js'
import { Ajv2020 } from 'ajv/dist/2020.js'
import type { ValidationIssue } from '../errors.js'

/**
 * The one JSON Schema validator of the package (Ajv): a resume payload against the
 * `responseSchema` its interrupt advertised, and an edited tool input against the JSON Schema
 * its tool declares (the `approval` frame's `inputSchema`, `src/core/frames.ts`), whoever edited
 * it (the admin page, a door's resume, the decision API) and again in the AI SDK runner before
 * the tool runs. PURE: no I/O.
 *
 * A schema's dialect is its `$schema` (draft 2020-12, 2019-09, or draft-07, the default: the AI
 * SDK's `JSONSchema7`). Formats (`format: 'email'`) are annotations here, not checked: no
 * format vocabulary is loaded. Compiled validators are kept by the schema's JSON, a bounded
 * number of them.
 */

/** The package's own schemas (`src/agui/translate/schemas.ts`): draft 2020-12, every keyword known. */
const own = new Ajv2020({ strict: true, allErrors: false })

/** A tool's schema is the app's (or a library's): unknown keywords and formats pass, unlogged. */
const toolOptions: Options = { strict: false, allErrors: false, logger: false }
const dialects = {
  draft7: new Ajv(toolOptions),
  draft2019: new Ajv2019(toolOptions),
  draft2020: new Ajv2020(toolOptions),
}

function dialectOf(schema: Record<string, unknown>) {
  const declared = typeof schema.$schema === 'string' ? schema.$schema : ''
  if (declared.includes('2020-12')) return dialects.draft2020
  if (declared.includes('2019-09')) return dialects.draft2019
  return dialects.draft7
}

const CACHE_LIMIT = 256
const compiled = new Map<string, ValidateFunction | null>()

/** A validator of `schema`, compiled once per schema JSON; `null` when it does not compile. */
function validatorOf(schema: unknown, strict: boolean): ValidateFunction | null {
  const key = `${strict ? 'own' : 'tool'}:${JSON.stringify(schema)}`
  const hit = compiled.get(key)
  if (hit !== undefined) {
    // Most recently used last: the oldest is the one dropped when the cache is full.
    compiled.delete(key)
    compiled.set(key, hit)
    return hit
  }
  let validate: ValidateFunction | null
  try {
    if (typeof schema === 'boolean') validate = dialects.draft7.compile(schema)
    else if (schema !== null && typeof schema === 'object' && !Array.isArray(schema)) {
      const object = schema as Record<string, unknown>
      validate = (strict ? own : dialectOf(object)).compile(object)
    } else validate = null
  } catch {
    validate = null
  }
  if (compiled.size >= CACHE_LIMIT) compiled.delete(compiled.keys().next().value!)
  compiled.set(key, validate)
  return validate
}

/** A property name a refusal may repeat: short, plain characters (a client may choose keys). */
const PLAIN_SEGMENT = /^[A-Za-z0-9_$-]{1,64}$/

/**
 * The JSON pointer an issue names, relative to the checked value (`/to`, `/items/0`; `''` for
 * the value itself): ajv's `instancePath`, plus the property a `required` rule misses or an `additionalProperties` rule refuses. A
 * segment that is not a plain name (a key the client chose, unusual characters) ends the
 * pointer there: a refusal names where, never what was sent.
 */
function pointerOf(error: NonNullable<ValidateFunction['errors']>[number]): string {
  const segments = error.instancePath.split('/').slice(1)
  const missing = (error.params as { missingProperty?: unknown }).missingProperty
  if (error.keyword === 'required' && typeof missing === 'string') segments.push(missing)
  const extra = (error.params as { additionalProperty?: unknown }).additionalProperty
  if (error.keyword === 'additionalProperties' && typeof extra === 'string') segments.push(extra)
  const kept: string[] = []
  for (const segment of segments) {
    if (!PLAIN_SEGMENT.test(segment)) break
    kept.push(segment)
  }
  return kept.map((segment) => `/${segment}`).join('')
}

/**
 * The first rule `value` breaks of `schema`, as an issue: `field` is `prefix` followed by the
 * JSON pointer of the place (`input/to`), `rule` the schema keyword (`type`, `required`,
 * `additionalProperties`); `null` when it fits, or when there is no schema (`undefined`). A
 * schema that does not compile breaks the rule `inputSchema` on `prefix` (nothing can be
 * checked against it, so nothing is let through). The value is never quoted.
 */
export function schemaIssue(
  schema: unknown,
  value: unknown,
  prefix = '',
  options: { own?: boolean } = {}
): ValidationIssue | null {
  if (schema === undefined) return null
  const validate = validatorOf(schema, options.own ?? false)
  if (!validate) return { field: prefix, rule: 'inputSchema' }
  if (validate(value)) return null
  const [error] = validate.errors ?? []
  if (!error) return { field: prefix, rule: 'schema' }
  return { field: `${prefix}${pointerOf(error)}`, rule: error.keyword }
}

/** Whether `value` fits one of the package's own schemas (strict draft 2020-12). */
export function fitsOwnSchema(schema: Record<string, unknown>, value: unknown): boolean {
  return schemaIssue(schema, value, '', { own: true }) === null
}
