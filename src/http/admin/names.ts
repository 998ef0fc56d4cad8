import type { DisplayName } from '../principal.js'
import { t } from './layout.js'

/**
 * The app's display names for principals (config `displayName`), as the console shows them:
 * asked once per id per request, before a view renders (views are synchronous), and always
 * shown as text (escaped, bidi-isolated by `t`), never as markup.
 */

/** Longest name shown, in code points (a longer one is cut with an ellipsis). */
const MAX_NAME = 120

/** One request's names: `load` the ids a view shows, then `of(id)` reads them (sync). */
export class PrincipalNames {
  readonly #hook?: DisplayName
  readonly #names = new Map<string, string>()

  constructor(hook?: DisplayName) {
    this.#hook = hook
  }

  /**
   * Ask the hook for each id not asked yet in this request. A hook that throws, or answers
   * anything but a non-blank string, leaves the id shown as it is.
   */
  async load(ids: Iterable<string | null | undefined>) {
    const hook = this.#hook
    if (!hook) return this
    const fresh = [...new Set(ids)].filter(
      (id): id is string => typeof id === 'string' && !this.#names.has(id)
    )
    await Promise.all(
      fresh.map(async (id) => {
        let name: unknown
        try {
          name = await hook(id)
        } catch {
          name = undefined
        }
        this.#names.set(id, typeof name === 'string' && name.trim() ? cut(name.trim()) : id)
      })
    )
    return this
  }

  /** The name to show for `id` (plain text: escape it where it goes). */
  of(id: string): string {
    return this.#names.get(id) ?? id
  }

  /** `id` as HTML: its name, and the id beside it when they differ (the filters take ids). */
  html(id: string): string {
    const name = this.of(id)
    return name === id ? `<code>${t(id)}</code>` : `${t(name)} <code class="id">${t(id)}</code>`
  }
}

function cut(name: string) {
  const points = Array.from(name)
  return points.length > MAX_NAME ? `${points.slice(0, MAX_NAME - 1).join('')}…` : name
}
