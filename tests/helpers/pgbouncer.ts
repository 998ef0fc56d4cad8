import { spawn, execFileSync, type ChildProcess } from 'node:child_process'
import { chownSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { getActiveTest } from '@japa/runner'
import type { ConnectionConfig } from '@adonisjs/lucid/types/database'
import { connectionConfig } from './db.js'

/** Where Debian's `pgbouncer` is, or `null`. */
export function pgbouncerBin(): string | null {
  return ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer'].find((path) => existsSync(path)) ?? null
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

/**
 * A PRIVATE PgBouncer in front of the suite's PostgreSQL, in `mode` (`transaction` or
 * `session`), on its own port, killed when the running test ends. Returns the Lucid connection
 * config of the suite's database through it.
 */
export async function startPgBouncer(
  mode: 'transaction' | 'session'
): Promise<{ port: number; connection: ConnectionConfig }> {
  const direct = connectionConfig('pg') as any
  const { host, port: pgPort, user, password, database } = direct.connection
  const dir = mkdtempSync(join(tmpdir(), 'agent-stream-pgbouncer-'))
  const port = await freePort()
  writeFileSync(join(dir, 'userlist.txt'), `"${user}" "${password}"\n`)
  writeFileSync(
    join(dir, 'pgbouncer.ini'),
    [
      '[databases]',
      `${database} = host=${host} port=${pgPort} dbname=${database}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${join(dir, 'userlist.txt')}`,
      `pool_mode = ${mode}`,
      'default_pool_size = 5',
      'max_client_conn = 200',
      `logfile = ${join(dir, 'pgbouncer.log')}`,
      'ignore_startup_parameters = extra_float_digits',
      '',
    ].join('\n')
  )
  // PgBouncer refuses to run as root: as `postgres` then.
  const asRoot = process.getuid?.() === 0
  if (asRoot) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim())
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim())
    for (const file of ['', 'userlist.txt', 'pgbouncer.ini']) chownSync(join(dir, file), uid, gid)
  }
  const child: ChildProcess = spawn(
    pgbouncerBin()!,
    [...(asRoot ? ['-u', 'postgres'] : []), join(dir, 'pgbouncer.ini')],
    { stdio: 'ignore' }
  )
  child.unref()
  const kill = () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    rmSync(dir, { recursive: true, force: true })
  }
  process.once('exit', kill)
  getActiveTest()?.cleanup(() => {
    process.off('exit', kill)
    kill()
  })
  const deadline = Date.now() + 10_000
  while (true) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect({ host: '127.0.0.1', port })
      socket.once('connect', () => (socket.destroy(), resolve(true)))
      socket.once('error', () => resolve(false))
    })
    if (open) break
    if (Date.now() > deadline || child.exitCode !== null) {
      throw new Error(`pgbouncer did not listen on ${port}`)
    }
    await sleep(20)
  }
  return {
    port,
    connection: { ...direct, connection: { ...direct.connection, host: '127.0.0.1', port } },
  }
}
