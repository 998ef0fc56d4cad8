/**
 * The Durable Streams read path (PROTOCOL.md sections 5.5-5.8, 10, 12.7), source-agnostic:
 * `serveRead` (catch-up, long-poll, SSE), `serveHead`, `preflightAnswer` (CORS), the protocol's
 * headers and refusals. Every door of Durable Streams serves its sources through it.
 */
export { serveRead, serveHead, isText, type ReadRules } from './serve.js'
export { preflightAnswer, dsRefusal, baseHeaders, H } from './headers.js'
export { responseCursor } from './cursor.js'
