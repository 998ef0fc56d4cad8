/**
 * This package's Durable Streams door for the bench (bench/ds_section.ts): a runtime on fresh
 * tables of `process.env.DB`, its Fetch handler on a bare `node:http` server on loopback.
 */
import type { DsTarget } from './durable_streams.js'

export async function servePackage(): Promise<{ target: DsTarget; close: () => Promise<void> }> {
  throw new Error('the Durable Streams write path is not on this branch yet')
}
