import { randomBytes } from 'node:crypto'
import string from '@adonisjs/core/helpers/string'
import type { Notice } from './notices.js'

/**
 * The admin console's shell, shared by every admin view (queue, item, runs, history): escaping,
 * bidi isolation, the page frame with its navigation, the stylesheet and the nonce the strict
 * Content-Security-Policy lets run. Views render their `<main>` content and hand it here.
 */

/**
 * Every attribute value goes through this: text, never markup. A value people read (an
 * `aria-label`, a `title`, an `<option>`'s label) goes through {@link plain} instead, which
 * also neutralises {@link BIDI_CONTROLS}; `e` alone is for values the page keeps as data
 * (`value`, `href`, `data-*`), where a character must survive a form's round trip.
 */
export const e = (value: unknown) => string.escapeHTML(String(value ?? ''))

/**
 * The characters that never act in the console, whatever stored content holds them: the bidi
 * formatting characters (embeddings, overrides, isolates and marks, UAX #9), the control
 * characters (C0 but tab, line feed and carriage return; DEL; C1), the line and paragraph
 * separators and the byte order mark. Each is shown as a visible marker (`[U+202E]`) instead.
 */
export const BIDI_CONTROLS =
  // eslint-disable-next-line no-control-regex -- matching control characters is the point
  /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F\u061C\u200E\u200F\u2028\u2029\u202A-\u202E\u2066-\u2069\uFEFF]/g

/**
 * Every value shown as text goes through this: escaped, in its own `<bdi>` (a bidi isolate with
 * `dir=auto`: nothing in it reorders the text around it), and each bidi control shown as a
 * visible marker (`[U+202E]`) instead of acting: a title with a right-to-left override renders
 * in the order it was written, and the person sees that it held one.
 */
export const t = (value: unknown) =>
  `<bdi>${e(value).replace(BIDI_CONTROLS, (c) => `<span class="bidi">${marker(c)}</span>`)}</bdi>`

/** `[U+202E]`: how a bidi control is shown instead of acting. */
const marker = (c: string) => `[U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}]`

/**
 * For text where no markup may go (an `aria-label`, a `title`, an `<option>`, `<title>`, SVG
 * text): escaped, each of {@link BIDI_CONTROLS} replaced by its visible marker. Every attribute
 * people read that holds stored content goes through this.
 */
export const plain = (value: unknown) => e(String(value ?? '').replace(BIDI_CONTROLS, marker))

/** `value` as JSON text, each of {@link BIDI_CONTROLS} as its JSON escape (the same value parsed). */
export const inertJson = (value: unknown, space?: number) =>
  (JSON.stringify(value, null, space) ?? 'null').replace(
    BIDI_CONTROLS,
    (c) => `\\u${c.codePointAt(0)!.toString(16).padStart(4, '0')}`
  )

/** A value for an inline `<script>`: JSON that cannot close the script element. */
export const scriptJson = (value: unknown) =>
  JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029')

/** A fresh nonce for one response (128 bits, base64). */
export const newNonce = () => randomBytes(16).toString('base64')

/**
 * The Content-Security-Policy of every admin response: only the page's own nonce-tagged script
 * and style run; fetches and the live stream go to this origin; forms post to this origin.
 */
export const contentSecurityPolicy = (nonce: string) =>
  `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'`

/** The console's sections, in navigation order; `path` is under `<base>/admin`. */
export const NAV = [
  { key: 'queue', label: 'Queue', path: '' },
  { key: 'runs', label: 'Runs', path: '/runs' },
  { key: 'history', label: 'History', path: '/history' },
  { key: 'webhooks', label: 'Webhooks', path: '/webhooks' },
] as const

export type NavKey = (typeof NAV)[number]['key']

export interface Shell {
  /** Route prefix, e.g. `/agent`. */
  base: string
  nonce: string
  /** The document title (plain text; escaped here). */
  title: string
  /** Which navigation entry is current. */
  current: NavKey
  /** The `<main>` content, already rendered (escaped by the view). */
  main: string
  /**
   * A notice shown above the content (its text is plain; escaped here), announced to screen
   * readers: a success as a status, a refusal as an alert in its own style.
   */
  notice?: Notice
  /** A view's own stylesheet, after the console's (trusted code of the package, never data). */
  styles?: string
  /** The page's own script (trusted code of the package, never data; data goes through `scriptJson`). */
  script?: string
}

/** The console's stylesheet: compact tables, visible focus, AA contrast. */
export const STYLES = `
:root{color-scheme:light;--fg:#1d1d1f;--muted:#555;--line:#d0d0d5;--accent:#0b57d0;--bad:#a4161a;--ok:#1b6b2a;--bg2:#f4f5f7}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:var(--fg);background:#fff}
header.top{display:flex;align-items:center;gap:1.5rem;padding:.5rem 1rem;border-bottom:1px solid var(--line);background:var(--bg2)}
header.top .brand{font-weight:600;font-size:15px;margin:0}
nav.sections a{color:var(--fg);text-decoration:none;padding:.35rem .6rem;border-radius:4px;margin-right:.25rem}
nav.sections a[aria-current]{background:#fff;font-weight:600;box-shadow:inset 0 -2px 0 var(--accent)}
nav.sections a:hover{text-decoration:underline}
main{padding:1rem;max-width:1280px;margin:0 auto}
h1{font-size:20px;margin:.25rem 0 .75rem}h2{font-size:16px;margin:1rem 0 .5rem}
a{color:var(--accent)}
:focus-visible{outline:3px solid var(--accent);outline-offset:2px}
.notice{background:#e7f3ea;border:1px solid #b5d8bd;padding:.5rem .75rem;border-radius:4px}
.notice.refused{background:#fbeaea;border:1px solid var(--bad);border-left-width:6px;color:#5f0b0e}
table{border-collapse:collapse;width:100%}
th,td{text-align:left;padding:.3rem .5rem;border-bottom:1px solid var(--line);vertical-align:top}
th{font-weight:600;background:var(--bg2);white-space:nowrap}
td{max-width:28rem;overflow-wrap:anywhere}
tr.current{background:#eaf1fd}
tbody tr:hover{background:#f7f9fc}
.muted,.kind{color:var(--muted)}
code,pre{font:12.5px/1.4 ui-monospace,SFMono-Regular,Menlo,monospace}
pre{background:var(--bg2);padding:.5rem .75rem;overflow:auto;border-radius:4px;max-height:24rem;white-space:pre-wrap;overflow-wrap:anywhere}
dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:.15rem 1rem;margin:.5rem 0}
dl.meta dt{color:var(--muted)}dl.meta dd{margin:0;overflow-wrap:anywhere}
form.filters{display:flex;flex-wrap:wrap;gap:.5rem 1rem;align-items:end;margin:0 0 .75rem}
form.filters label{display:flex;flex-direction:column;font-size:12px;color:var(--muted)}
input,select,textarea,button{font:inherit;color:inherit}
input[type=text],input[type=search],select,textarea{border:1px solid #8a8a92;border-radius:4px;padding:.25rem .4rem;background:#fff}
textarea{width:100%;min-height:10rem;font:12.5px/1.4 ui-monospace,monospace}
button{border:1px solid #8a8a92;background:#fff;border-radius:4px;padding:.3rem .8rem;cursor:pointer}
button.primary{background:var(--accent);border-color:var(--accent);color:#fff}
button.danger{color:var(--bad);border-color:var(--bad)}
.pages{display:flex;gap:1rem;margin:.75rem 0}
.counts{display:flex;flex-wrap:wrap;gap:.25rem .75rem;margin:.25rem 0 .75rem;padding:0;list-style:none;font-size:13px}
.badge{display:inline-block;padding:0 .4rem;border-radius:9px;background:var(--bg2);border:1px solid var(--line);font-size:12px}
.live{font-size:12px;color:var(--muted)}
kbd{font:12px ui-monospace,monospace;border:1px solid var(--line);border-bottom-width:2px;border-radius:3px;padding:0 .3rem;background:#fff;color:var(--fg)}
button.primary kbd{background:transparent;color:#fff;border-color:#c9d9f6}button.danger kbd{color:var(--bad)}
.cannot{background:var(--bg2);border:1px solid var(--line);padding:.5rem .75rem;border-radius:4px}
bdi{unicode-bidi:isolate}.bidi{color:var(--bad);background:#fee;font:bold .8em monospace}
.split{display:grid;grid-template-columns:minmax(0,1fr) 18rem;gap:1.5rem}
@media (max-width:900px){.split{grid-template-columns:1fr}}
.side{border-left:1px solid var(--line);padding-left:1rem}
ul.panel{list-style:none;margin:0;padding:0}ul.panel li{padding:.3rem 0;border-bottom:1px solid var(--line);overflow-wrap:anywhere}
ul.panel a[aria-current]{font-weight:600}
.crumbs{margin:0 0 .25rem;font-size:13px}
.copy{background:#fff8e1;border:1px solid #f0d890;padding:.5rem .75rem;border-radius:4px}
.conversation{border:1px solid var(--line);border-radius:4px;padding:.5rem .75rem;max-height:32rem;overflow:auto}
.conversation p{margin:.35rem 0}.say{white-space:pre-wrap;overflow-wrap:anywhere}
.ask{font-weight:600}.err,.bad{color:var(--bad)}
.said{border-left:3px solid var(--ok);background:#f3f8f4;padding:.2rem .75rem;margin:.5rem 0;border-radius:0 4px 4px 0}
.said p{margin:.25rem 0}.said .who{font-size:12px;font-weight:600;color:var(--ok)}.said .say{white-space:pre-wrap;overflow-wrap:anywhere}
.scope{border-left:3px solid #9bb7e6;padding-left:.75rem;margin:.25rem 0}
.call p,.result p{margin:.25rem 0;font-size:12px;color:var(--muted)}
form.decide{margin:.5rem 0 1rem;display:flex;flex-direction:column;gap:.35rem;max-width:48rem}
form.decide button{align-self:flex-start}
form.decide label{font-size:13px}
fieldset{border:1px solid var(--line);border-radius:4px;margin:.25rem 0}
fieldset label{margin-right:1rem}
.decided{background:var(--bg2);padding:.5rem .75rem;border-radius:4px}
.total{margin:.25rem 0 .5rem}
.sr-only{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
`

/** The whole document: top bar with the navigation, the notice, the view's `<main>`, its script. */
export function renderShell(shell: Shell) {
  const nav = NAV.map(
    (entry) =>
      `<a href="${e(`${shell.base}/admin${entry.path}`)}"${entry.key === shell.current ? ' aria-current="page"' : ''}>${e(entry.label)}</a>`
  ).join('')
  const notice = !shell.notice
    ? '<p class="sr-only" role="status"></p>'
    : shell.notice.refused
      ? `<p class="notice refused" role="alert"><strong>Refused.</strong> ${e(shell.notice.text)}</p>`
      : `<p class="notice" role="status">${e(shell.notice.text)}</p>`
  const script = shell.script ? `<script nonce="${e(shell.nonce)}">${shell.script}</script>` : ''
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<title>${plain(shell.title)} · Agent console</title>
<style nonce="${e(shell.nonce)}">${STYLES}${shell.styles ?? ''}</style></head><body>
<header class="top"><p class="brand">Agent console</p><nav class="sections" aria-label="Sections">${nav}</nav></header>
<main id="main">${notice}${shell.main}</main>
${script}
</body></html>`
}
