import { fork, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { getActiveTest } from '@japa/runner'

const SCRIPT = fileURLToPath(new URL('../fixtures/draining_app.ts', import.meta.url))

/**
 * A replica in its own Node process, run as a deploy runs it (tests/fixtures/draining_app.ts):
 * `url` once it listens; `holding(n)` resolves once `n` held runs wait in total; `draining()`
 * once SIGTERM started the drain; `release()` lets held runs finish; `exited` with its code.
 */
export async function startDrainingReplica(drain: string) {
  const child: ChildProcess = fork(SCRIPT, [], {
    execArgv: ['--import=@poppinss/ts-exec'],
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', DRAIN: drain },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  const held: string[] = []
  let draining = false
  const waiters = new Set<() => void>()
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve))
  getActiveTest()?.cleanup(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  })
  const url = await new Promise<string>((resolve, reject) => {
    child.on('message', (message: { url?: string; holding?: string; draining?: boolean }) => {
      if (message.url) resolve(message.url)
      if (message.holding) held.push(message.holding)
      if (message.draining) draining = true
      for (const waiter of waiters) waiter()
    })
    void exited.then((code) => reject(new Error(`replica exited early (${code})`)))
  })
  const until = (ready: () => boolean) =>
    new Promise<void>((resolve) => {
      if (ready()) return resolve()
      const check = () => {
        if (!ready()) return
        waiters.delete(check)
        resolve()
      }
      waiters.add(check)
    })
  return {
    url,
    exited,
    holding: (count: number) => until(() => held.length >= count),
    draining: () => until(() => draining),
    terminate: () => child.kill('SIGTERM'),
    release: () => child.send({ op: 'release' }),
  }
}
