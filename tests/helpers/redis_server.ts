import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { createServer, connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { getActiveTest } from '@japa/runner'

/**
 * A PRIVATE `redis-server` for one test: its own port and directory, no persistence, stopped and
 * started again by the test (an outage), killed when the test ends. The suite's shared Redis is
 * never touched.
 */
export interface PrivateRedis {
  port: number
  url: string
  /** Stop it (SIGTERM, as an operator's restart does); resolves once it exited. */
  stop(): Promise<void>
  /** Start it again on the same port; resolves once it accepts connections. */
  start(): Promise<void>
}

/** Whether `redis-server` is installed. */
export function canStartRedis() {
  return ['/usr/bin/redis-server', '/usr/local/bin/redis-server'].some((path) => existsSync(path))
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

async function waitForPort(port: number, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect({ host: '127.0.0.1', port })
      socket.once('connect', () => (socket.destroy(), resolve(true)))
      socket.once('error', () => resolve(false))
    })
    if (open) return
    await sleep(20)
  }
  throw new Error(`private redis-server did not listen on ${port}`)
}

/** Start a private `redis-server`, stopped and removed when the running test ends. */
export async function startPrivateRedis(): Promise<PrivateRedis> {
  const dir = mkdtempSync(join(tmpdir(), 'agent-stream-redis-'))
  const port = await freePort()
  let child: ChildProcess | null = null
  const launch = () => {
    child = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '']
        .concat(['--appendonly', 'no', '--protected-mode', 'no', '--logfile', join(dir, 'log')])
        .concat(['--daemonize', 'no']),
      { stdio: 'ignore' }
    )
    child.unref()
  }
  const stop = async () => {
    const running = child
    child = null
    if (!running || running.exitCode !== null || running.signalCode !== null) return
    const exited = new Promise((resolve) => running.once('exit', resolve))
    running.kill('SIGTERM')
    await Promise.race([exited, sleep(5000).then(() => running.kill('SIGKILL'))])
  }
  const start = async () => {
    launch()
    await waitForPort(port)
  }
  const onExit = () => {
    child?.kill('SIGKILL')
    rmSync(dir, { recursive: true, force: true })
  }
  process.once('exit', onExit)
  getActiveTest()?.cleanup(async () => {
    process.off('exit', onExit)
    const running = child
    child = null
    if (running && running.exitCode === null) running.kill('SIGKILL')
    rmSync(dir, { recursive: true, force: true })
  })
  await start()
  return { port, url: `redis://127.0.0.1:${port}`, stop, start }
}
