#!/usr/bin/env node
/**
 * `npm test`: the whole suite against SQLite, PostgreSQL and MySQL, one after the other.
 * DBS=sqlite,pg picks some. Prints each run's summary and a closing "N passed, N failed" line;
 * exits non-zero when any test failed or a database was unreachable.
 */
import { spawn } from 'node:child_process'
import net from 'node:net'

const all = { sqlite: null, pg: ['PostgreSQL', process.env.PG_HOST ?? '127.0.0.1', Number(process.env.PG_PORT ?? 5432)], mysql: ['MySQL/MariaDB', process.env.MYSQL_HOST ?? '127.0.0.1', Number(process.env.MYSQL_PORT ?? 3306)] }
const dbs = (process.env.DBS ?? 'sqlite,pg,mysql').split(',').map((s) => s.trim()).filter(Boolean)
const extra = process.argv.slice(2)

const reachable = (host, port) =>
  new Promise((resolve) => {
    const socket = net.connect({ host, port, timeout: 2000 })
    socket.once('connect', () => (socket.destroy(), resolve(true)))
    socket.once('error', () => resolve(false))
    socket.once('timeout', () => (socket.destroy(), resolve(false)))
  })

let passed = 0
let failed = 0
let broken = false
const lines = []
for (const db of dbs) {
  if (!(db in all)) {
    console.error(`Unknown database "${db}" in DBS (use sqlite, pg, mysql)`)
    process.exit(2)
  }
  const service = all[db]
  if (service && !(await reachable(service[1], service[2]))) {
    console.error(`\n${service[0]} is not reachable at ${service[1]}:${service[2]}: start it (see README, "Running the tests") or run DBS=sqlite npm test`)
    lines.push(`${db}: not reachable`)
    broken = true
    continue
  }
  console.log(`\n==> DB=${db}`)
  const output = await new Promise((resolve) => {
    let text = ''
    const child = spawn(process.execPath, ['--import=@poppinss/ts-exec', '--enable-source-maps', 'bin/test.ts', ...extra], {
      env: { ...process.env, DB: db },
      stdio: ['ignore', 'pipe', 'inherit'],
    })
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
