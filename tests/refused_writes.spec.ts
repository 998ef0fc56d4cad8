import { test } from '@japa/runner'
import type { Database } from '@adonisjs/lucid/database'
import type { DeliveredFrame } from '../src/core/frames.js'
import type { AgentRunner } from '../src/runner/contract.js'
import { RUN_FAILED_MESSAGE } from '../src/sink/subscriber.js'
import { isRefusal, isTransientError } from '../src/store/transient.js'
import { DIALECT } from './helpers/db.js'
import { setupRunner } from './helpers/parking.js'
import { Replica } from './helpers/replica.js'
import { collect, runId, sleep, textOf } from './helpers/sink.js'

/**
 * Issue 21 item 12: a write the database keeps refusing (a real trigger refusing one run's
 * frames, as a check constraint would: SQLSTATE 23514 on PostgreSQL, a SIGNAL on MySQL, RAISE on
 * SQLite) ends the stream all the same: the agent's signal aborts, readers on this replica are
 * told from memory and readers on another once the lease lapses, each with the error after
 * everything stored; nothing is retried forever.
 */
const LEASE_MS = 1500

/** A trigger refusing every insert and update of `id`'s frames. */
async function refuseFrames(db: Database, frames: string, id: string) {
  const client = db.connection()
  if (DIALECT === 'pg') {
    await client.rawQuery(`create or replace function refuse_frames() returns trigger as $$
      begin
        if new.run_id = '${id}' then
          raise exception 'refused by the test' using errcode = 'check_violation';
        end if;
        return new;
      end $$ language plpgsql`)
    await client.rawQuery(
      `create trigger refuse_frames before insert or update on ${frames} for each row execute function refuse_frames()`
    )
  } else if (DIALECT === 'mysql') {
    for (const event of ['insert', 'update']) {
      await client.rawQuery(`create trigger refuse_frames_${event} before ${event} on ${frames}
        for each row begin
          if new.run_id = '${id}' then
            signal sqlstate '23000' set message_text = 'refused by the test';
          end if;
        end`)
    }
  } else {
    for (const event of ['insert', 'update']) {
      await client.rawQuery(`create trigger refuse_frames_${event} before ${event} on ${frames}
        when new.run_id = '${id}' begin select raise(abort, 'refused by the test'); end`)
    }
  }
}

/** A runner that writes, waits for the test to refuse its frames, writes again, then waits. */
function refusedRunner() {
  const seen = { aborted: false, writeError: null as unknown }
  let refused!: () => void
  const refusing = new Promise<void>((resolve) => (refused = resolve))
  let wrote!: () => void
  const before = new Promise<void>((resolve) => (wrote = resolve))
  const runner: AgentRunner = {
    async start(ctx) {
      await ctx.writer.write({ t: 'text', v: 'stored before ' })
      await ctx.writer.flush!()
      wrote()
      await refusing
      try {
        await ctx.writer.write({ t: 'event', event: { kind: 'title', title: 'refused' } })
      } catch (error) {
        seen.writeError = error
      }
      // An agent that goes on working: only its signal stops it.
      const deadline = Date.now() + 20_000
      while (!ctx.signal.aborted && Date.now() < deadline) await sleep(20)
      seen.aborted = ctx.signal.aborted
      return { status: 'finished' }
    },
    async resume() {
      return { status: 'finished' }
    },
  }
  return { runner, seen, before, refused }
}

const isError = (frame: DeliveredFrame) => frame.t === 'error'

test.group('Refused writes | a stream always ends', () => {
  test('the agent is stopped; readers here and on another replica get the error after what is stored', async ({
    assert,
  }) => {
    const { runner, seen, before, refused } = refusedRunner()
    const warnings: unknown[] = []
    const { db, sink, driver } = await setupRunner(runner, {
      leaseMs: LEASE_MS,
      onError: (error) => warnings.push(error),
    })
    const id = runId()
    const { done } = await driver.start({ runId: id })
    const here = collect(sink.subscribe(id), { timeoutMs: 20_000 })
    const replica = await Replica.start({ leaseMs: LEASE_MS })
    const there: DeliveredFrame[] = []
    const onReplica = replica.subscribe(id, (frame) => there.push(frame))
    await onReplica.ready
    await before
    await refuseFrames(db, sink.tables.frames, id)
    refused()

    const frames = await here
    assert.equal(textOf(frames), 'stored before ')
    assert.isTrue(isError(frames.at(-1)!))
    assert.equal((frames.at(-1) as any).message, RUN_FAILED_MESSAGE)
    assert.equal((frames.at(-1) as any).code, 'run_failed')

    const ended = await Promise.race([onReplica.done.then(() => true), sleep(20_000)])
    assert.isTrue(ended, "the other replica's reader ended")
    assert.equal(textOf(there), 'stored before ')
    assert.isTrue(isError(there.at(-1)!))

    await done
    assert.isTrue(seen.aborted, "the agent's signal aborted")
    // Offered to no replica to take over: its writes would be refused there the same way.
    const segmentOf = async () =>
      (await db.from(sink.tables.streams).where('run_id', id).first())?.segment ?? null
    for (let i = 0; i < 100 && (await segmentOf()) !== null; i++) await sleep(20)
    assert.isNull(await segmentOf())
    assert.equal((seen.writeError as any)?.code, 'E_STORE_UNAVAILABLE')
    // Told once as a refusal (not "retrying"), with the database's error as its cause.
    const refusals = warnings.filter((w: any) => w?.reason === 'refused')
    assert.isAbove(refusals.length, 0)
    assert.isTrue(isRefusal((refusals[0] as any).cause))
  }).timeout(60_000)
})

test.group('Refused writes | which errors are refusals', () => {
  test('constraints and raised triggers: refusals, never transient', ({ assert }) => {
    const errors = [
      { code: '23514' },
      { code: '23505' },
      { code: 'P0001' },
      { code: 'ER_SIGNAL_EXCEPTION', errno: 1644, sqlState: '23000' },
      { code: 'ER_CHECK_CONSTRAINT_VIOLATED', errno: 3819 },
      { code: 'ER_CONSTRAINT_FAILED', errno: 4025 },
      { code: 'SQLITE_CONSTRAINT_TRIGGER' },
      { code: 'SQLITE_CONSTRAINT_CHECK' },
    ]
    for (const error of errors) {
      assert.isTrue(isRefusal(Object.assign(new Error('x'), error)), JSON.stringify(error))
      assert.isFalse(isTransientError(Object.assign(new Error('x'), error)), JSON.stringify(error))
    }
    assert.isFalse(isRefusal(Object.assign(new Error('x'), { code: 'ECONNRESET' })))
    assert.isFalse(isRefusal(Object.assign(new Error('x'), { code: '40P01' })))
    assert.isFalse(isRefusal(new Error('deadlock')))
  })
})
