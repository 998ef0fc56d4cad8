import { build } from 'esbuild'
import { fileURLToPath } from 'node:url'

/**
 * The `useChat` page's script (`demo/public/usechat.ts`: React, `@ai-sdk/react`, `ai`), bundled
 * in memory with esbuild for the browser. About a second; done once when the demo starts.
 */
export async function bundleUseChat(): Promise<string> {
  const result = await build({
    entryPoints: [fileURLToPath(new URL('public/usechat.ts', import.meta.url))],
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    minify: true,
    legalComments: 'none',
    define: { 'process.env.NODE_ENV': '"production"' },
    logLevel: 'silent',
  })
  return result.outputFiles[0].text
}
