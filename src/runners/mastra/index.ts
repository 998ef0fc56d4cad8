/**
 * `adonis-agent-stream/mastra`: run a Mastra `Agent` (`@mastra/core`, an optional peer) as this
 * package's runner (docs/runners/mastra.md). Kept off the package root so the root never loads
 * Mastra. What an app calls: `mastraAgent(options)` for the runner, `lucidMastraStore({ db })`
 * for the Mastra storage its paused runs resume from (Mastra's `workflows` domain on the app's
 * database: `LucidMastraWorkflows`).
 */
export { mastraAgent } from './agent.js'
export type { MastraAgentOptions } from './agent.js'
export { LucidMastraWorkflows, lucidMastraStore } from './store.js'
export type { LucidMastraStoreOptions } from './store.js'
