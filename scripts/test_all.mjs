#!/usr/bin/env node
/**
 * `npm test`: first what the suite needs on this machine (scripts/test_setup.ts: Debian's
 * chromium installed when missing and possible, the databases and Redis reachable; otherwise it
 * stops with the line to run), then lint and typecheck, then the whole suite against SQLite,
 * PostgreSQL and MySQL, one after the other, then CopilotKit's own suite in Chromium
 * (scripts/test_copilotkit.mjs; COPILOTKIT=0 leaves it out). DBS=sqlite,pg picks some. Prints each run's summary
 * and a closing "N passed, N failed" line; exits non-zero when a step or any test failed.
 *
 * Each database's run is bounded (see runSuite): TEST_DB_TIMEOUT_S (default 1500) in all and
 * TEST_STALL_TIMEOUT_S (default 420) without a test starting or ending; past either it is
 * killed and reported as a failure naming the spec file, group, test and phase that was running.
 */
import { spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'

const dbs = (process.env.DBS ?? 'sqlite,pg,mysql')
  .split(',')
  .map((s) => s.trim())
  .filter(Boolean)
const extra = process.argv.slice(2)
const unknown = dbs.filter((db) => !['sqlite', 'pg', 'mysql'].includes(db))
if (unknown.length > 0) {
  console.error(`Unknown database "${unknown[0]}" in DBS (use sqlite, pg, mysql)`)
  process.exit(2)
}

// Each step on this Node (24), whatever node is first on PATH; a failed step stops here.
for (const [what, command, args] of [
  ['setup', process.execPath, ['--import=@poppinss/ts-exec', 'scripts/test_setup.ts']],
  ['lint', 'npm', ['run', 'lint']],
  ['typecheck', 'npm', ['run', 'typecheck']],
]) {
  const step = spawnSync(command, args, {
    stdio: 'inherit',
    env: { ...process.env, DBS: dbs.join(',') },
  })
  if (step.status !== 0) {
    console.error(`\nnpm test stopped: ${what} failed`)
    process.exit(1)
  }
}

let passed = 0
let failed = 0
let broken = false
let interrupted = false
let killedRuns = 0
const lines = []
for (const db of dbs) {
  console.log(`\n==> DB=${db}`)
  const output = await runSuite(db)
  if (interrupted) process.exit(130)
  const plain = output.text.replace(/\u001b\[[0-9;]*m/g, '')
  const summary = /Tests\s+(.*)\((\d+)\)/.exec(plain)
  const p = Number(/(\d+) passed/.exec(summary?.[1] ?? '')?.[1] ?? 0)
  const f = Number(/(\d+) failed/.exec(summary?.[1] ?? '')?.[1] ?? 0)
  passed += p
  failed += f
  const minutes = `${(output.seconds / 60).toFixed(1)} min`
  if (output.killed) {
    broken = true
    killedRuns += 1
    console.error(`\nDB=${db}: ${output.killed}`)
    lines.push(`${db}: KILLED after ${minutes}: ${output.killed}`)
  } else {
    if (output.code !== 0 && f === 0) broken = true
    lines.push(
      `${db}: ${summary ? summary[1].trim() : `no summary (exit ${output.code}; last: ${output.last})`} in ${minutes}`
    )
  }
}
// CopilotKit itself in Chromium (compat/copilotkit: the AG-UI features, its chat, its stop), its
// own workspace installed once; COPILOTKIT=0 leaves it out (it runs on no database).
if (process.env.COPILOTKIT !== '0') {
  console.log('\n==> CopilotKit (npm run test:copilotkit)')
  const started = Date.now()
  const suite = spawnSync(process.execPath, ['scripts/test_copilotkit.mjs'], {
    stdio: ['ignore', 'pipe', 'inherit'],
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  })
  process.stdout.write(suite.stdout ?? '')
  const plain = (suite.stdout ?? '').replace(/\u001b\[[0-9;]*m/g, '')
  // Its docs blocks (Japa's "Tests N passed") and its node:test files ("ℹ pass N", "ℹ fail N").
  const count = (pattern) => [...plain.matchAll(pattern)].reduce((n, m) => n + Number(m[1]), 0)
  const p = count(/Tests\s+(\d+) passed/g) + count(/^ℹ pass (\d+)$/gm)
  const f = count(/Tests\s+(?:\d+ passed, )?(\d+) failed/g) + count(/^ℹ fail (\d+)$/gm)
  passed += p
  failed += f
  if (suite.status !== 0 && f === 0) broken = true
  const minutes = `${((Date.now() - started) / 60000).toFixed(1)} min`
  lines.push(
    `copilotkit: ${p} passed, ${f} failed${suite.status !== 0 ? ` (exit ${suite.status})` : ''} in ${minutes}`
  )
}
console.log('\n' + lines.join('\n'))
console.log(
  `${passed} passed, ${failed} failed${killedRuns > 0 ? `, ${killedRuns} run(s) killed by the watchdog` : ''}`
)
process.exit(failed > 0 || broken ? 1 : 0)

/**
 * One database's run of bin/test.ts, as a child in its own process group, under a watchdog: it is
 * killed (the whole group: its private database servers too) when it runs longer than
 * TEST_DB_TIMEOUT_S in all, or when no test starts or ends for TEST_STALL_TIMEOUT_S (longer
 * than the longest test's own timeout, which Japa enforces, but Japa bounds neither hooks nor
 * cleanup functions). The child keeps TEST_PROGRESS_FILE holding where it is (bin/test.ts), so
 * `killed` names the spec file, group, test and phase that were running.
 */
function runSuite(db) {
  const totalBound = seconds('TEST_DB_TIMEOUT_S', 1500)
  const stallBound = seconds('TEST_STALL_TIMEOUT_S', 420)
  const progress = join(mkdtempSync(join(tmpdir(), 'agent-stream-test-')), 'progress.json')
  const started = Date.now()
  return new Promise((resolve) => {
    let text = ''
    let killed = null
    const child = spawn(
      process.execPath,
      ['--import=@poppinss/ts-exec', '--enable-source-maps', 'bin/test.ts', ...extra],
      {
        env: { ...process.env, DB: db, TEST_PROGRESS_FILE: progress },
        stdio: ['ignore', 'pipe', 'inherit'],
        detached: true,
      }
    )
    const kill = (why) => {
      if (killed) return
      killed = `${why}; running: ${where(progress)}`
      try {
        process.kill(-child.pid, 'SIGKILL')
      } catch {
        child.kill('SIGKILL')
      }
    }
    // An interrupted `npm test` takes its run (and the run's servers) with it.
    const forward = (signal) => () => {
      interrupted = true
      kill(`interrupted (${signal})`)
    }
    const onInt = forward('SIGINT')
    const onTerm = forward('SIGTERM')
    process.once('SIGINT', onInt)
    process.once('SIGTERM', onTerm)
    const watchdog = setInterval(() => {
      const now = Date.now()
      if (now - started > totalBound * 1000) {
        kill(`ran longer than TEST_DB_TIMEOUT_S=${totalBound}`)
      } else if (now - lastStep(progress, started) > stallBound * 1000) {
        kill(`no test started or ended for TEST_STALL_TIMEOUT_S=${stallBound}`)
      }
    }, 1000)
    child.stdout.on('data', (chunk) => {
      process.stdout.write(chunk)
      text += chunk
    })
    child.on('close', (code) => {
      clearInterval(watchdog)
      process.off('SIGINT', onInt)
      process.off('SIGTERM', onTerm)
      const last = where(progress)
      rmSync(dirname(progress), { recursive: true, force: true })
      resolve({ text, code, killed, last, seconds: (Date.now() - started) / 1000 })
    })
  })
}

function seconds(name, fallback) {
  const value = Number(process.env[name] ?? fallback)
  if (!Number.isFinite(value) || value <= 0) {
    console.error(`${name} must be a number of seconds above 0`)
    process.exit(2)
  }
  return value
}

/** Where the run is, from its progress file (bin/test.ts), as one line. */
function where(path) {
  try {
    const { file, group, test, phase, since } = JSON.parse(readFileSync(path, 'utf8'))
    const what = [file, group, test && `"${test}"`].filter(Boolean).join(' > ')
    const secs = Math.round((Date.now() - Date.parse(since)) / 1000)
    return `${what || '(nothing yet)'}, in its ${phase}, for ${secs} s`
  } catch {
    return 'unknown (no test had started: loading the spec files?)'
  }
}

/** When the run last started or ended a test or group (the progress file's mtime). */
function lastStep(path, started) {
  try {
    return statSync(path).mtimeMs
  } catch {
    return started
  }
}
