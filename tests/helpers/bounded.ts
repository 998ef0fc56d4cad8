/**
 * `work`, or a rejection with `Error(message)` once `ms` have passed first: for what Japa does
 * not bound itself (group setup and teardown hooks, a test's cleanup functions) and for waits
 * that could otherwise hang a run (a browser launch, a private server's start). The timer does
 * not keep the process alive.
 */
export async function within<T>(work: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${message} (bounded to ${ms} ms)`)), ms)
    timer.unref()
  })
  try {
    return await Promise.race([work, late])
  } finally {
    clearTimeout(timer)
  }
}
