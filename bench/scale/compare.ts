/**
 * The scale curves (issue 26), before and after in one run: each script of `bench/scale/` (one
 * topic each: `reattach`, `first_token`, `viewers`, `purge`) runs on this tree and on the code
 * before the scale work (`BENCH_BEFORE`, default {@link BEFORE}: a detached git worktree of that
 * commit, with these same scripts copied in), database after database, one process each, back to
 * back. A script prints one JSON row per line (`{ metric, db, x, xLabel, value, unit, load }`);
 * this prints them as one Markdown table, the machine's load beside each value.
 *
 * `BENCH_SCALE=<topic,...>` picks topics; `BENCH_SCALE_BEFORE=0` runs this tree alone (what the
 * quick CI pass does: the curves' shapes, not the comparison).
 */
import { spawn, execFileSync } from 'node:child_process'
import { cpSync, existsSync, readdirSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** The last commit before the scale work: what "before" measures. */
export const BEFORE = 'cce9787'

/** One measured value of a curve. */
export interface ScaleRow {
  metric: string
  db: string
  x: number
  xLabel: string
  value: number | null
  unit: string
  load?: number
}

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const SCRIPTS = fileURLToPath(new URL('./', import.meta.url))
const TOPIC_ORDER = ['first_token', 'reattach', 'viewers', 'purge']

/** The topics present (a script per topic), in the issue's order, filtered by `BENCH_SCALE`. */
export function scaleTopics(): string[] {
  const present = readdirSync(SCRIPTS)
    .filter((file) => file.endsWith('.ts') && !['compare.ts', 'common.ts'].includes(file))
    .map((file) => file.slice(0, -3))
  const chosen = process.env.BENCH_SCALE?.split(',').map((topic) => topic.trim())
  const ordered = [
    ...TOPIC_ORDER.filter((topic) => present.includes(topic)),
    ...present.filter((topic) => !TOPIC_ORDER.includes(topic)),
  ]
  return ordered.filter((topic) => !chosen || chosen.includes(topic))
}

/** A worktree of `rev` with this tree's `node_modules` and scale scripts (removed after the run). */
function beforeTree(rev: string): string {
  const dir = join(tmpdir(), `agent-stream-bench-before-${rev}`)
  if (!existsSync(join(dir, 'package.json'))) {
    rmSync(dir, { recursive: true, force: true })
    execFileSync('git', ['-C', ROOT, 'worktree', 'prune'])
    execFileSync('git', ['-C', ROOT, 'worktree', 'add', '--detach', dir, rev], { stdio: 'ignore' })
    symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'))
  }
  // The same measurement on both trees: this tree's scripts, the old tree's package code.
  cpSync(SCRIPTS, join(dir, 'bench', 'scale'), { recursive: true })
  return dir
}

/** Run one topic's script in `tree` on `db`; its rows (stderr passes through). */
function runScript(tree: string, topic: string, db: string): Promise<ScaleRow[]> {
  return new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      ['--expose-gc', '--import=@poppinss/ts-exec', join('bench', 'scale', `${topic}.ts`)],
      {
        cwd: tree,
        env: { ...process.env, BENCH_DBS: db },
        stdio: ['ignore', 'pipe', 'inherit'],
      }
    )
    let out = ''
    child.stdout.on('data', (chunk) => (out += chunk))
    child.on('close', (code) => {
      const rows: ScaleRow[] = []
      for (const line of out.split('\n')) {
        if (!line.startsWith('{')) continue
        try {
          rows.push(JSON.parse(line))
        } catch {
          // A line that is not a row (a script's own print) is not measured.
        }
      }
      if (code !== 0) process.stderr.write(`bench scale: ${topic} on ${db} exited ${code}\n`)
      resolve(rows)
    })
  })
}

const LABELS: Record<string, string> = { pg: 'PostgreSQL', sqlite: 'SQLite', mysql: 'MariaDB' }
const keyOf = (row: ScaleRow) => `${row.metric}\u0000${row.db}\u0000${row.x}`
const shown = (row: ScaleRow | undefined) =>
  !row || row.value === null
    ? 'n/a'
    : `${Number.isInteger(row.value) || Math.abs(row.value) >= 1000 ? Math.round(row.value) : row.value.toPrecision(3)} ${row.unit}${row.load === undefined ? '' : ` (load ${row.load.toFixed(1)})`}`

/**
 * Measure every topic on every database, before and after; returns the table's printer.
 */
export async function benchScaleSection(dbs: string[], quick: boolean) {
  const withBefore = process.env.BENCH_SCALE_BEFORE !== '0' && !quick
  const rev = process.env.BENCH_BEFORE ?? BEFORE
  const before = withBefore ? beforeTree(rev) : null
  const after: ScaleRow[] = []
  const old = new Map<string, ScaleRow>()
  for (const topic of scaleTopics()) {
    for (const db of dbs) {
      process.stderr.write(`bench: scale ${topic} on ${db}...\n`)
      if (before) for (const row of await runScript(before, topic, db)) old.set(keyOf(row), row)
      after.push(...(await runScript(ROOT, topic, db)))
    }
  }
  if (before) {
    execFileSync('git', ['-C', ROOT, 'worktree', 'remove', '--force', before])
  }
  return () => {
    console.log(
      `\n### Scale curves (issue 26)${before ? `: before (\`${rev}\`) and after, back to back` : ' (this tree only)'}\n`
    )
    console.log(
      before ? '| metric | database | x | before | after |' : '| metric | database | x | value |'
    )
    console.log(before ? '| --- | --- | --- | --- | --- |' : '| --- | --- | --- | --- |')
    for (const row of after) {
      const cells = [row.metric, LABELS[row.db] ?? row.db, `${row.x} ${row.xLabel}`]
      if (before) cells.push(shown(old.get(keyOf(row))))
      cells.push(shown(row))
      console.log(`| ${cells.join(' | ')} |`)
    }
  }
}
