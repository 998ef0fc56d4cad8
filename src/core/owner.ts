import type { Principal } from './run.js'

/**
 * Who owns what a principal starts through a door: its id, or `null` for an anonymous caller
 * (what a run row's `ownerId` records).
 */
export function ownerOf(principal: Principal | null | undefined): string | null {
  return principal?.id ?? null
}

/**
 * Whether a door run (a thread, a chat) belongs to the caller: the one ownership rule of every
 * door and route. Another principal's run is answered like a missing one.
 */
export function ownedBy(run: { ownerId: string | null }, principal: Principal | null | undefined) {
  return run.ownerId === ownerOf(principal)
}
