#!/usr/bin/env node
/**
 * `npm test`: first what the suite needs on this machine (scripts/test_setup.ts: Debian's
 * chromium installed when missing and possible, the databases and Redis reachable; otherwise it
 * stops with the line to run), then lint and typecheck, then the whole suite against SQLite,
 * PostgreSQL and MySQL, one after the other. DBS=sqlite,pg picks some. Prints each run's summary
 * and a closing "N passed, N failed" line; exits non-zero when a step or any test failed.
 */
import { spawn, spawnSync } from 'node:child_process'

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
const lines = []
for (const db of dbs) {
  console.log(`\n==> DB=${db}`)
  const output = await new Promise((resolve) => {
    let text = ''
    const child = spawn(
      process.execPath,
      ['--import=@poppinss/ts-exec', '--enable-source-maps', 'bin/test.ts', ...extra],
      {
        env: { ...process.env, DB: db },
        stdio: ['ignore', 'pipe', 'inherit'],
      }
    )
    child.stdout.on('data', (chunk) => {
      process.stdout.write(chunk)
      text += chunk
    })
    child.on('close', (code) => resolve({ text, code }))
  })
  const plain = output.text.replace(/\u001b\[[0-9;]*m/g, '')
  const summary = /Tests\s+(.*)\((\d+)\)/.exec(plain)
  const p = Number(/(\d+) passed/.exec(summary?.[1] ?? '')?.[1] ?? 0)
  const f = Number(/(\d+) failed/.exec(summary?.[1] ?? '')?.[1] ?? 0)
  passed += p
  failed += f
  if (output.code !== 0 && f === 0) broken = true
  lines.push(`${db}: ${summary ? summary[1].trim() : `no summary (exit ${output.code})`}`)
}
console.log('\n' + lines.join('\n'))
console.log(`${passed} passed, ${failed} failed`)
process.exit(failed > 0 || broken ? 1 : 0)
