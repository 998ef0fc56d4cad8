/**
 * The admin console's queue under load: `items` pending approvals in the table (five tools, two
 * approvers, asked over the last two days), then the queue's first page (`GET <prefix>/admin`:
 * the keyset page, the counts per filter, the HTML) requested over loopback HTTP from a real
 * AdonisJS app, `requests` times one after another. Server time is the page's own
 * `Server-Timing: app;dur=` (from the request reaching the controller to the HTML being ready);
 * the round trip on loopback is reported beside it.
 */
import { percentile } from './script.js'

export async function benchAdminQueue(
  dialect: string,
  options: { items: number; requests: number }
) {
  process.env.DB = dialect
  const { serveApp } = await import('../tests/helpers/http.js')
  const { resetTables } = await import('../tests/helpers/db.js')
  const { tableNames } = await import('../src/store/schema.js')
  const served = await serveApp()
  const db = await served.app.container.make('lucid.db')
  await resetTables(db)
  const now = Date.now()
  const table = tableNames().approvals
  const batch = 500
  for (let from = 0; from < options.items; from += batch) {
    const rows = []
    for (let i = from; i < Math.min(options.items, from + batch); i++) {
      rows.push({
        run_id: `bench-run-${Math.floor(i / 100)}`,
        park: 1,
        item_id: `call_${i}`,
        stream_run_id: `bench-run-${Math.floor(i / 100)}`,
        thread_id: `bench-thread-${Math.floor(i / 100)}`,
        stream_seq: (i % 100) + 1,
        approver: i % 3 === 0 ? 'ops' : 'requester',
        principal: JSON.stringify({ id: 'alice' }),
        expires_at: null,
        status: 'pending',
        created_at: now - Math.floor((i / options.items) * 2 * 86_400_000),
        tool_name: `tool_${i % 5}`,
        input: JSON.stringify({ to: 'team@example.com', i }),
        confirmation: JSON.stringify({ title: 'Send?', description: 'Emails the team.' }),
      })
    }
    await db.connection().table(table).multiInsert(rows)
  }
  const headers = { 'x-admin': 'yes', 'x-user': 'alice' }
  const times: number[] = []
  const server: number[] = []
  let rowsShown = 0
  // One request to warm the route, the templates and the connection pool.
  const warm = await fetch(`${served.url}/admin`, { headers })
  await warm.text()
  for (let i = 0; i < options.requests; i++) {
    const started = performance.now()
    const response = await fetch(`${served.url}/admin`, { headers })
    const html = await response.text()
    times.push(performance.now() - started)
    server.push(Number(/dur=([\d.]+)/.exec(response.headers.get('server-timing') ?? '')?.[1]))
    if (response.status !== 200) throw new Error(`admin queue: HTTP ${response.status}`)
    rowsShown = [...html.matchAll(/<tr data-key=/g)].length
  }
  served.agentStream.http.closeAll()
  served.http.closeAllConnections()
  await new Promise((resolve) => served.http.close(resolve))
  await served.agentStream.shutdown()
  await served.app.terminate()
  return {
    p50: percentile(server, 50),
    p99: percentile(server, 99),
    roundTripP50: percentile(times, 50),
    rowsShown,
  }
}
