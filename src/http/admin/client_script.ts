import { scriptJson } from './layout.js'

/**
 * The console's one script (inline, nonce-tagged; no build step):
 * - live updates: an `EventSource` on the console's event stream; each `queue` event fetches the
 *   view's live part (`#list`) and swaps it in. Only `#list` changes: a form being filled in is
 *   never touched, and keyboard focus on a row stays on that row. Refused (401: the session
 *   ended) or closed for good, the live note says updates stopped.
 * - keys (never while typing in a field): `j`/`k` move through the rows, `Enter` opens one,
 *   `/` goes to the filters, `a` approves (or answers), `r` rejects (or skips), `n` opens the
 *   next item, `e` edits the input.
 */
export function clientScript(config: { events: string; fragment: string }) {
  return `
(() => {
  const config = ${scriptJson(config)}
  const list = document.getElementById('list')
  const live = document.getElementById('live')
  let last = null
  let busy = false
  let again = false
  const keyOf = (el) => el && el.closest && el.closest('[data-key]') ? el.closest('[data-key]').getAttribute('data-key') : null
  async function refresh() {
    if (!list) return
    if (busy) { again = true; return }
    busy = true
    try {
      do {
        again = false
        const response = await fetch(config.fragment, { credentials: 'same-origin' })
        if (response.status === 401) { stopped('your session ended. Reload the page to sign in again.'); break }
        if (!response.ok) break
        const html = await response.text()
        if (html === last) continue
        last = html
        const focusedKey = list.contains(document.activeElement) ? keyOf(document.activeElement) : null
        list.innerHTML = html
        if (focusedKey) {
          for (const row of list.querySelectorAll('[data-key]')) {
            if (row.getAttribute('data-key') === focusedKey) { const link = row.querySelector('a'); if (link) link.focus(); break }
          }
        }
        if (live) live.textContent = 'Updated ' + new Date().toLocaleTimeString()
      } while (again)
    } catch {} finally { busy = false }
  }
  // Signed out (401 JSON on the live parts): say so, never a list silently frozen.
  function stopped(why) { if (live) live.textContent = 'Live updates stopped: ' + why }
  if (list && typeof EventSource === 'function') {
    const source = new EventSource(config.events)
    source.addEventListener('queue', () => { void refresh() })
    source.addEventListener('error', () => { if (source.readyState === EventSource.CLOSED) stopped('reload the page.') })
  }
  const rows = () => list ? [...list.querySelectorAll('tbody tr a.open')] : []
  function move(step) {
    const links = rows()
    if (links.length === 0) return
    const at = links.indexOf(document.activeElement)
    const next = at < 0 ? (step > 0 ? 0 : links.length - 1) : Math.min(links.length - 1, Math.max(0, at + step))
    links[next].focus()
    for (const tr of list.querySelectorAll('tr.current')) tr.classList.remove('current')
    links[next].closest('tr').classList.add('current')
  }
  function submit(id) {
    const form = document.getElementById(id)
    if (form) { form.requestSubmit(); return true }
    return false
  }
  document.addEventListener('keydown', (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey || event.defaultPrevented) return
    const target = event.target
    if (target && (target.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT', 'BUTTON'].includes(target.tagName))) return
    let done = true
    switch (event.key) {
      case 'j': case 'ArrowDown': move(1); break
      case 'k': case 'ArrowUp': move(-1); break
      case '/': { const first = document.querySelector('form.filters select, form.filters input'); if (first) first.focus(); else done = false; break }
      case 'a': done = submit('form-approve') || submit('form-answer'); break
      case 'r': done = submit('form-reject'); break
      case 'e': { const input = document.getElementById('edit-input'); if (input) input.focus(); else done = false; break }
      case 'n': { const next = document.getElementById('next-item'); if (next) next.click(); else done = false; break }
      default: done = false
    }
    if (done) event.preventDefault()
  })
})()
`
}
