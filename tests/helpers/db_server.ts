import { spawn, execFileSync, type ChildProcess } from 'node:child_process'
import {
  existsSync,
  readFileSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  chownSync,
  openSync,
  closeSync,
} from 'node:fs'
import { createServer, connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { ConnectionConfig } from '@adonisjs/lucid/types/database'
import { within } from './bounded.js'

/**
 * A PRIVATE database server for one test file: its own data directory under the temp dir, its own
 * port, started and stopped by the test (the shared servers on 5432/3306 are never touched).
 * PostgreSQL: `initdb` + `postgres` (as the `postgres` user when the tests run as root: postgres
 * refuses root). MariaDB: `mariadb-install-db` + `mariadbd --skip-grant-tables`.
 */
export interface PrivateServer {
  dialect: 'pg' | 'mysql'
  port: number
  /** The Lucid connection config of the server's database. */
  connection: ConnectionConfig
  /** Stop the server the way an operator restarts one (PostgreSQL fast, MariaDB normal). */
  stop(): Promise<void>
  /** Start it again on the same port and data directory; resolves once it takes queries. */
  start(): Promise<void>
  /** Kill it (if running) and remove its directory. Always safe to call. */
  destroy(): Promise<void>
  /**
   * Stall it: SIGSTOP to the server and every process under it (PostgreSQL's backends), as a
   * host that freezes does; no query fails, every one waits. `resume()` sends SIGCONT.
   */
  pause(): void
  resume(): void
}

/** A process and everything under it, by pid (from /proc). */
function processTree(pid: number): number[] {
  const out = [pid]
  for (const task of readdirSync(`/proc/${pid}/task`, { withFileTypes: false }) as string[]) {
    let children = ''
    try {
      children = readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8')
    } catch {}
    for (const child of children.split(' ').filter(Boolean)) out.push(...processTree(Number(child)))
  }
  return out
}

const DATABASE = 'agent_stream_outage'
/** How long `initdb` / `mariadb-install-db` may take (they run synchronously: killed past it). */
const SETUP_MS = 120_000
const isRoot = process.getuid?.() === 0

/** Where PostgreSQL's server binaries are, or `null` when it is not installed. */
function pgBin(): string | null {
  const base = '/usr/lib/postgresql'
  if (existsSync(base)) {
    const versions = readdirSync(base).sort((a, b) => Number(b) - Number(a))
    for (const version of versions) {
      const bin = join(base, version, 'bin')
      if (existsSync(join(bin, 'postgres'))) return bin
    }
  }
  try {
    return execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim()
  } catch {
    return null
  }
}

function which(...names: string[]): string | null {
  for (const name of names) {
    for (const dir of (process.env.PATH ?? '').split(':').concat(['/usr/sbin', '/usr/bin'])) {
      if (existsSync(join(dir, name))) return join(dir, name)
    }
  }
  return null
}

/** Whether a private server of this dialect can be started here (its binaries are installed). */
export function canStartPrivateServer(dialect: 'pg' | 'mysql') {
  if (dialect === 'pg') return pgBin() !== null && (!isRoot || userIds('postgres') !== null)
  return (
    which('mariadbd', 'mysqld') !== null && which('mariadb-install-db', 'mysql_install_db') !== null
  )
}

function userIds(name: string): { uid: number; gid: number } | null {
  try {
    const uid = Number(execFileSync('id', ['-u', name], { encoding: 'utf8' }).trim())
    const gid = Number(execFileSync('id', ['-g', name], { encoding: 'utf8' }).trim())
    return { uid, gid }
  } catch {
    return null
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as { port: number }).port
      server.close(() => resolve(port))
    })
  })
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Resolves once something accepts TCP connections on the port (throws after `timeoutMs`). */
async function waitForPort(port: number, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect({ host: '127.0.0.1', port })
      socket.once('connect', () => (socket.destroy(), resolve(true)))
      socket.once('error', () => resolve(false))
    })
    if (open) return
    await sleep(25)
  }
  throw new Error(`private database server did not listen on ${port}`)
}

async function waitForExit(child: ChildProcess, timeoutMs = 20_000) {
  if (child.exitCode !== null || child.signalCode !== null) return
  await Promise.race([
    new Promise((resolve) => child.once('exit', resolve)),
    sleep(timeoutMs).then(() => child.kill('SIGKILL')),
  ])
}

/** Start a private server of `dialect` (`pg` or `mysql`) with an empty database. */
export async function startPrivateServer(dialect: 'pg' | 'mysql'): Promise<PrivateServer> {
  const dir = mkdtempSync(join(tmpdir(), `agent-stream-${dialect}-`))
  const port = await freePort()
  const log = join(dir, 'server.log')
  let child: ChildProcess | null = null
  const owner = dialect === 'pg' && isRoot ? userIds('postgres') : null
  if (owner) chownSync(dir, owner.uid, owner.gid)
  const asOwner = owner ? { uid: owner.uid, gid: owner.gid } : {}

  const launch = () => {
    const out = openSync(log, 'a')
    if (owner) chownSync(log, owner.uid, owner.gid)
    const command =
      dialect === 'pg'
        ? [
            join(pgBin()!, 'postgres'),
            ['-D', join(dir, 'data'), '-p', String(port), '-k', dir]
              .concat(['-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=off'])
              .concat(['-c', 'shared_buffers=16MB', '-c', 'max_connections=40']),
          ]
        : [
            which('mariadbd', 'mysqld')!,
            [
              '--no-defaults',
              `--datadir=${join(dir, 'data')}`,
              `--port=${port}`,
              '--bind-address=127.0.0.1',
              `--socket=${join(dir, 'sock')}`,
              `--pid-file=${join(dir, 'server.pid')}`,
              '--skip-grant-tables',
              '--skip-log-bin',
              '--innodb-log-file-size=8M',
              '--innodb-buffer-pool-size=32M',
              '--innodb-buffer-pool-dump-at-shutdown=0',
              '--innodb-buffer-pool-load-at-startup=0',
              '--character-set-server=utf8mb4',
              ...(isRoot ? ['--user=root'] : []),
            ],
          ]
    child = spawn(command[0] as string, command[1] as string[], {
      ...asOwner,
      stdio: ['ignore', out, out],
      detached: false,
    })
    closeSync(out)
    child.unref()
  }

  const stop = async () => {
    const running = child
    child = null
    if (!running || running.exitCode !== null || running.signalCode !== null) return
    // PostgreSQL: SIGINT is the "fast" shutdown (open sessions are terminated, as a restart
    // does); SIGTERM would wait for the pool's idle connections. MariaDB: SIGTERM.
    running.kill(dialect === 'pg' ? 'SIGINT' : 'SIGTERM')
    await waitForExit(running)
  }

  const start = async () => {
    launch()
    await waitForPort(port)
    if (dialect === 'mysql') {
      // The port opens a little before the server takes queries.
      await ready(async () => {
        const mysql = await import('mysql2/promise')
        const conn = await mysql.createConnection({ host: '127.0.0.1', port, user: 'root' })
        await conn.query(`create database if not exists ${DATABASE}`)
        await conn.end()
      })
    } else {
      await ready(async () => {
        const { default: pg } = await import('pg')
        const client = new pg.Client({
          host: '127.0.0.1',
          port,
          user: 'postgres',
          database: 'postgres',
          connectionTimeoutMillis: 5000,
        })
        await client.connect()
        await client.end()
      })
    }
  }

  const destroy = async () => {
    const running = child
    child = null
    if (running && running.exitCode === null && running.signalCode === null) {
      running.kill('SIGKILL')
      await waitForExit(running, 5000)
    }
    rmSync(dir, { recursive: true, force: true })
  }

  // Whatever ends this process (a failed test, forceExit), the server and its files go with it.
  const onExit = () => {
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    rmSync(dir, { recursive: true, force: true })
  }
  process.once('exit', onExit)
  const destroyAll = async () => {
    process.off('exit', onExit)
    await destroy()
  }

  try {
    if (dialect === 'pg') {
      execFileSync(
        join(pgBin()!, 'initdb'),
        ['-D', join(dir, 'data'), '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync'],
        { ...asOwner, stdio: 'ignore', timeout: SETUP_MS }
      )
    } else {
      execFileSync(
        which('mariadb-install-db', 'mysql_install_db')!,
        [
          '--no-defaults',
          `--datadir=${join(dir, 'data')}`,
          '--auth-root-authentication-method=normal',
          '--skip-test-db',
          '--innodb-log-file-size=8M',
          ...(isRoot ? ['--user=root'] : []),
        ],
        { stdio: 'ignore', timeout: SETUP_MS }
      )
    }
    await start()
  } catch (error) {
    await destroyAll()
    throw error
  }

  const connection: ConnectionConfig =
    dialect === 'pg'
      ? {
          client: 'pg',
          connection: {
            host: '127.0.0.1',
            port,
            user: 'postgres',
            password: '',
            database: 'postgres',
          },
          pool: { min: 0, max: 10 },
        }
      : {
          client: 'mysql2',
          connection: {
            host: '127.0.0.1',
            port,
            user: 'root',
            password: '',
            database: DATABASE,
            charset: 'utf8mb4',
          },
          pool: { min: 0, max: 10 },
        }
  const signalAll = (signal: NodeJS.Signals) => {
    const running = child as ChildProcess | null
    if (!running?.pid) return
    for (const pid of processTree(running.pid)) {
      try {
        process.kill(pid, signal)
      } catch {}
    }
  }
  return {
    dialect,
    port,
    connection,
    stop,
    start,
    destroy: async () => {
      signalAll('SIGCONT')
      await destroyAll()
    },
    pause: () => signalAll('SIGSTOP'),
    resume: () => signalAll('SIGCONT'),
  }
}

async function ready(probe: () => Promise<void>, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs
  while (true) {
    try {
      return await probe()
    } catch (error) {
      if (Date.now() > deadline) throw error
      await sleep(50)
    }
  }
}

/**
 * A private server of `dialect` for one test group: started in the group's setup (unless
 * `skip`), destroyed in its teardown. Returns the server of the running group.
 */
export function privateServerFor(
  group: { setup(hook: () => Promise<void>): void; teardown(hook: () => Promise<void>): void },
  dialect: 'pg' | 'mysql',
  skip: boolean
): () => PrivateServer {
  let server: PrivateServer | null = null
  // Japa bounds neither hook: each is bounded here, with an error that says which.
  group.setup(async () => {
    if (!skip) {
      server = await within(
        startPrivateServer(dialect),
        180_000,
        `the private ${dialect} server of this group did not start`
      )
    }
  })
  group.teardown(async () => {
    await within(
      server?.destroy() ?? Promise.resolve(),
      30_000,
      `the private ${dialect} server of this group was not destroyed`
    )
    server = null
  })
  return () => server!
}
