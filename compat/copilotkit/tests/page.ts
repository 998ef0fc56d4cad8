import { build } from 'esbuild'
import { fileURLToPath } from 'node:url'

/**
 * A page of `page/`, bundled by esbuild: the chat page (`app.tsx`: `CopilotChat` +
 * `useInterrupt`) by default, or the feature pages (`features.tsx`).
 */
export async function bundlePage(entry = 'app.tsx') {
  const result = await build({
    entryPoints: [fileURLToPath(new URL(`../page/${entry}`, import.meta.url))],
    bundle: true,
    write: false,
    outdir: 'out',
    format: 'esm',
    platform: 'browser',
    jsx: 'automatic',
    minify: true,
    logLevel: 'silent',
    define: { 'process.env.NODE_ENV': '"production"' },
    // KaTeX's fonts (CopilotKit's markdown): left out, the page needs none of them.
    loader: { '.woff': 'empty', '.woff2': 'empty', '.ttf': 'empty' },
  })
  const file = (ext: string) => result.outputFiles.find((f) => f.path.endsWith(ext))?.text ?? ''
  const html = `<!doctype html><html><head><meta charset="utf-8"><title>CopilotKit + adonis-agent-stream</title>
<link rel="stylesheet" href="/app.css"></head><body style="margin:0"><div id="root"></div>
<script type="module" src="/app.js"></script></body></html>`
  return {
    '/': { type: 'text/html', body: html },
    '/app.js': { type: 'text/javascript', body: file('.js') },
    '/app.css': { type: 'text/css', body: file('.css') },
  } as Record<string, { type: string; body: string }>
}
