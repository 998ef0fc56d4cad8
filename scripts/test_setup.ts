/**
 * What `npm test` needs on this machine, checked (and installed when it can be) before anything
 * runs (scripts/test_all.mjs runs it first):
 *
 * - Debian's `chromium` for the browser tests: installed with apt-get when missing and this is
 *   root on a Debian-like system; otherwise it stops with the line to run.
 * - Debian's `pgbouncer` and `faketime` for the fault tests: installed the same way when
 *   missing; without them those tests are skipped (said here, not a failure).
 * - The databases of `DBS` and Redis (the Redis notifier tests): each reachable and its test
 *   database there; otherwise it stops with the line that starts them (scripts/services.sh).
 *
 * Exits 0 when all is there, 1 after printing what is missing.
 */
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import net from 'node:net'
import { connectionConfig, createDatabase } from '../tests/helpers/db.js'
import { REDIS_URL } from '../tests/helpers/redis.js'
import { pgbouncerBin } from '../tests/helpers/pgbouncer.js'
import { LIBFAKETIME } from '../tests/helpers/replica.js'

type Dialect = 'pg' | 'mysql'
const NAMES: Record<Dialect, string> = { pg: 'PostgreSQL', mysql: 'MySQL/MariaDB' }
const root = process.getuid?.() === 0
const sudo = root ? '' : 'sudo '

/**
 * Debian's packages, installed with apt-get when missing and this is root on a Debian-like
 * system: `null` once all are there, else what is wrong.
 */
function install(packages: string[], why: string): string | null {
  const line = `${sudo}apt-get update && ${sudo}apt-get install -y ${packages.join(' ')}`
  if (!existsSync('/usr/bin/apt-get')) return `${why}: install ${packages.join(', ')}`
  if (!root) return `${why}. Install them: ${line}`
  console.log(`==> installing Debian's ${packages.join(', ')} (${why}: ${line})`)
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }
  for (const args of [
    ['update', '-qq'],
    ['install', '-y', '-qq', ...packages],
  ]) {
    const step = spawnSync('apt-get', args, { stdio: 'inherit', env })
    if (step.status !== 0) return `apt-get ${args.join(' ')} failed. Install them: ${line}`
  }
  return null
}

/** The browser the tests launch (tests/helpers/browser.ts): CHROMIUM_PATH or Debian's. */
function chromium(): string | null {
  const path = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
  if (existsSync(path)) return null
  if (process.env.CHROMIUM_PATH)
    return `CHROMIUM_PATH=${path} does not exist: point it at a Chromium`
  const problem = install(['chromium'], 'The browser tests need Chromium')
  if (problem) return problem
  return existsSync(path) ? null : `chromium installed, but ${path} is missing: set CHROMIUM_PATH`
}

/**
 * The fault tests' tools: PgBouncer in front of a private PostgreSQL (tests/helpers/pgbouncer.ts)
 * and libfaketime for a replica with a skewed clock (tests/helpers/replica.ts). Installed when
 * possible; without them those tests are skipped, said here (never a failure).
 */
function faultTools() {
  const missing = [
    ...(pgbouncerBin() ? [] : ['pgbouncer']),
    // (The library's path is x86_64's; the package's command says it is installed anywhere.)
    ...(existsSync(LIBFAKETIME) || existsSync('/usr/bin/faketime') ? [] : ['faketime']),
  ]
  if (missing.length === 0) return
  const problem = install(missing, 'The PgBouncer and clock-skew tests need them')
  if (problem) console.warn(`\n${problem}\n(those tests are skipped without them)`)
}

function reachable(host: string, port: number) {
  return new Promise<boolean>((resolve) => {
    const socket = net.connect({ host, port, timeout: 2000 })
    socket.once('connect', () => (socket.destroy(), resolve(true)))
    socket.once('error', () => resolve(false))
    socket.once('timeout', () => (socket.destroy(), resolve(false)))
  })
}

/** `null` when the suite's database of `dialect` answers a query, else what is wrong. */
async function database(dialect: Dialect): Promise<string | null> {
  const config = connectionConfig(dialect) as any
  const { host, port, user, database: name } = config.connection
  if (!(await reachable(host, port))) return `${NAMES[dialect]} is not reachable at ${host}:${port}`
  const db = createDatabase({ ...config, acquireConnectionTimeout: 5000, pool: { min: 0, max: 1 } })
  try {
    await db.connection().rawQuery('select 1')
    return null
  } catch (error) {
    return `${NAMES[dialect]} at ${host}:${port} refused database "${name}" for ${user}: ${(error as Error).message}`
  } finally {
    await db.manager.closeAll()
  }
}

async function redis(): Promise<string | null> {
  const url = new URL(REDIS_URL)
  const up = await reachable(url.hostname, Number(url.port || 6379))
  return up ? null : `Redis is not reachable at ${REDIS_URL} (the Redis notifier tests)`
}

const dbs = (process.env.DBS ?? 'sqlite,pg,mysql').split(',').map((s) => s.trim())
const browser = chromium()
faultTools()
const databases = await Promise.all(
  dbs.filter((db): db is Dialect => db === 'pg' || db === 'mysql').map(database)
)
const services = [...databases, await redis()].filter((problem) => problem !== null)

if (browser) console.error(`\n${browser}`)
if (services.length > 0) {
  console.error(`\n${services.join('\n')}`)
  console.error(
    `Start them (PostgreSQL, MariaDB, Redis; the test databases): ${sudo}sh scripts/services.sh`
  )
  if (databases.some(Boolean)) console.error('(or run on SQLite only: DBS=sqlite npm test)')
}
process.exit(browser || services.length > 0 ? 1 : 0)
