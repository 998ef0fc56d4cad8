/**
 * The spec files whose behaviour does not depend on the suite's database: `bin/test.ts` runs
 * them with `DB=sqlite` only and leaves them out of the `DB=pg` and `DB=mysql` runs of the
 * whole suite (naming a file with `--files`, or `EVERY_SPEC=1`, runs it on any database).
 * Each entry says why the database cannot change what it checks: it touches no store at all,
 * or only an SQLite file of its own, or only code that runs before any read or write. Whatever
 * exercises the store, parking, SQL, the notifiers, replicas, or a door against the database
 * (where a dialect, or an asynchronous driver against SQLite's synchronous one, can matter)
 * stays on all three, and so does every spec a "tested on the three databases" in the README
 * or docs/ rests on. The one list: docs/testing.md#which-specs-run-on-every-database.
 */
export const SQLITE_ONLY: Record<string, string> = {
  'tests/agui_ids.spec.ts': 'the AG-UI id grammar: pure functions, no store',
  'tests/agui_schemas.spec.ts': 'reply checks against a responseSchema: pure, no store',
  'tests/agui_translate.spec.ts': 'the AG-UI translator on frames in memory: pure, no store',
  'tests/agui_tool_messages.spec.ts':
    'tool results, parent messages, the transcript and custom events of the AG-UI translator on frames in memory: pure, no store',
  'tests/check_layers.spec.ts': 'dependency-cruiser rules on fixture files: no store',
  'tests/checkpoints.spec.ts': 'translator checkpoints in memory, bounded in bytes: no store',
  'tests/coalescing.spec.ts': 'the coalescing decision: pure functions, no store',
  'tests/configure.spec.ts':
    'node ace configure in a fresh app, migrated on an SQLite file of its own (never DB)',
  'tests/continuation_calls.spec.ts': 'where a dead segment calls stood, from frames in memory',
  'tests/demo.spec.ts': 'the demo app, always on an SQLite file of its own (never DB)',
  'tests/docs_code.spec.ts': 'type-checks the docs blocks and checks their links: no store',
  'tests/door_kernel.spec.ts': 'the door kernel on items in memory: no store',
  'tests/door_state_codecs.spec.ts': 'the door state codecs: pure, no store',
  'tests/large_body_refusal.spec.ts':
    'refusals answered before the body is read (413, 415, 401): no read or write reaches the store',
  'tests/package.spec.ts':
    'npm pack, then a fresh app using the tarball on an SQLite file of its own (never DB)',
  'tests/parking_sweeper.spec.ts': 'the sweeper with steps that are plain functions: no store',
  'tests/projection.spec.ts': 'the public projection of frames: pure, no store',
  'tests/sse_writer.spec.ts': 'serveChunks on node:http with chunks in memory: no store',
  'tests/sqlite_only.spec.ts': 'this list checked against the files: no store',
  'tests/suite_rejections.spec.ts': 'bin/test.ts on a fixture project with no database',
  'tests/telemetry_carrier.spec.ts':
    'the stored W3C trace context written and read from span contexts in memory: no store',
  'tests/timeline.spec.ts': 'the run timeline rendered from an inspection in memory: no store',
  'tests/web_kit_stop.spec.ts':
    "session auth and shield's CSRF around the stop routes; the stops themselves run on the three databases in run_control, stop_routes and stop_replicas.spec.ts",
  'tests/web_kit_pages.spec.ts':
    "session auth and shield's CSRF around the pages in Chromium; the pages' own reads and writes run on the three databases in usechat_page and admin_*.spec.ts, the 401s in web_kit.spec.ts",
}
