import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { getActiveTest } from '@japa/runner'
import type { HttpContext } from '@adonisjs/core/http'
import { defineConfig as defineSessionConfig, stores } from '@adonisjs/session'
import { defineConfig as defineAuthConfig } from '@adonisjs/auth'
import { sessionGuard, sessionUserProvider } from '@adonisjs/auth/session'
import type { AgentStreamConfig } from '../../src/define_config.js'
import type { AgentStream } from '../../src/agent_stream.js'
import { bundleUseChat } from '../../demo/bundle.js'
import shieldConfig from '../fixtures/web_kit/shield.js'
import { resetTables } from './db.js'
import { setupApp } from './app.js'
import { within } from './bounded.js'

/** The fixture app's people: alice asks, bob is someone else, root is the admin. */
export const PEOPLE = [
  { email: 'alice@example.com', role: 'member' },
  { email: 'bob@example.com', role: 'member' },
  { email: 'root@example.com', role: 'admin' },
] as const

/** Who the signed-in user of `ctx` is, as the package's principal (`{ id, roles }`), or nobody. */
function userOf(ctx: HttpContext) {
  const user = (ctx as any).auth?.user as { id: number; role: string } | undefined
  return user ? { id: String(user.id), roles: [user.role] } : null
}

/**
 * A web app as AdonisJS's web starter kit sets one up: `@adonisjs/session` (cookie store,
 * `SameSite=Lax`), `@adonisjs/auth` with the session guard and its stock `auth` middleware,
 * `@adonisjs/shield` with its stock config (CSRF on, `exceptRoutes: []`, the XSRF cookie on),
 * the stock exception handler, a users table with a `role` column and a login route; the
 * package's routes mounted as the README shows, under `/agent` behind `middleware.auth()`.
 * Served over loopback HTTP. Pages: `GET /login` (a form with shield's `_csrf`), `POST /login`
 * (`email`; back to the page the auth middleware redirected from), `POST /logout`, and `GET /chat` (behind auth: the demo's `useChat` page
 * with shield's token in `<meta name="csrf-token">`).
 */
export async function serveWebKit(config: AgentStreamConfig = {}) {
  const app = await setupApp(
    {
      principal: userOf,
      admin: (ctx) => userOf(ctx)?.roles.includes('admin') ?? false,
      approverPolicy: (principal, item) =>
        !!principal && (principal.roles?.includes('admin') || principal.id === item.requester?.id),
      ...config,
    },
    {
      environment: 'web',
      extend: {
        providers: [
          () => import('@adonisjs/session/session_provider'),
          () => import('@adonisjs/shield/shield_provider'),
          () => import('@adonisjs/auth/auth_provider'),
        ],
        config: {
          session: defineSessionConfig({
            enabled: true,
            cookieName: 'adonis-session',
            clearWithBrowser: false,
            age: '2h',
            cookie: { path: '/', httpOnly: true, secure: false, sameSite: 'lax' },
            store: 'cookie',
            stores: { cookie: stores.cookie() },
          }),
          auth: defineAuthConfig({
            default: 'web',
            guards: {
              web: sessionGuard({
                useRememberMeTokens: false,
                provider: sessionUserProvider({
                  model: () => import('../fixtures/web_kit/user.js'),
                }),
              }),
            },
          }),
          shield: shieldConfig,
        },
      },
    }
  )
  const db = await app.container.make('lucid.db')
  await resetTables(db)
  await db.connection().schema.dropTableIfExists('web_kit_users')
  await db.connection().schema.createTable('web_kit_users', (table) => {
    table.increments('id')
    table.string('email').notNullable().unique()
    table.string('role').notNullable()
  })
  await db.table('web_kit_users').multiInsert(PEOPLE.map((person) => ({ ...person })))
  const { default: User } = await import('../fixtures/web_kit/user.js')

  const agentStream: AgentStream = await app.container.make('agentStream')
  const router = await app.container.make('router')
  const server = await app.container.make('server')
  // start/kernel.ts of the starter kit.
  server.errorHandler(() => import('../fixtures/web_kit/exception_handler.js'))
  router.use([
    () => import('@adonisjs/core/bodyparser_middleware'),
    () => import('@adonisjs/session/session_middleware'),
    () => import('@adonisjs/shield/shield_middleware'),
    () => import('@adonisjs/auth/initialize_auth_middleware'),
  ])
  const middleware = router.named({
    auth: () => import('../fixtures/web_kit/auth_middleware.js'),
  })
  // start/routes.ts.
  const script = await bundleUseChat()
  router.get('/login', ({ request, response }) =>
    response.type('html').send(`<!doctype html><html lang="en"><title>Sign in</title>
<form method="post" action="/login"><input type="hidden" name="_csrf" value="${request.csrfToken}">
<label>Email <input name="email"></label><button type="submit">Sign in</button></form></html>`)
  )
  router.post('/login', async (ctx) => {
    const user = await User.findBy('email', String(ctx.request.input('email') ?? ''))
    if (!user) return ctx.response.status(422).send('No such user')
    await (ctx as any).auth.use('web').login(user)
    // Back where the auth middleware sent the person from (its intended URL).
    return ctx.response.redirect().status(303).toIntended('/')
  })
  router.post('/logout', async (ctx) => {
    await (ctx as any).auth.use('web').logout()
    return ctx.response.status(204)
  })
  router
    .get('/chat', ({ request, response }) =>
      response.type('html').send(`<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="csrf-token" content="${request.csrfToken}"><title>Chat</title></head>
<body data-api="/agent/chat"><div id="root"></div><script type="module" src="/chat.js"></script></body></html>`)
    )
    .use(middleware.auth())
  router.get('/chat.js', ({ response }) => response.type('text/javascript').send(script))
  agentStream.registerRoutes({ prefix: '/agent' }, (group) => group.use(middleware.auth()))

  await server.boot()
  const http = createServer(server.handle.bind(server))
  server.setNodeServer(http)
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}`
  getActiveTest()?.cleanup(async () => {
    agentStream.http.closeAll()
    http.closeAllConnections()
    await new Promise((resolve) => http.close(resolve))
    await within(
      agentStream.driver.settled(),
      30_000,
      'the runs this test started did not settle after it ended (a runner still waiting?)'
    )
  })
  const users = await User.all()
  const idOf = (email: string) => String(users.find((u) => u.email === email)!.id)
  return { app, agentStream, url, idOf }
}

/**
 * A client of the fixture app holding its cookies, as a browser would (no `SameSite` rules:
 * every request is same-site here): `signIn(email)` loads the login page and posts its form;
 * `fetch` sends the cookies and keeps what the app sets; `xsrf()` is the `XSRF-TOKEN` cookie as
 * a page script reads it, `pageToken(path)` the `<meta name="csrf-token">` of a page.
 */
export function cookieClient(base: string) {
  const jar = new Map<string, string>()
  const keep = (response: Response) => {
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';')
      const at = pair.indexOf('=')
      const name = pair.slice(0, at)
      const value = pair.slice(at + 1)
      if (/max-age=0|expires=thu, 01 jan 1970/i.test(line)) jar.delete(name)
      else jar.set(name, value)
    }
    return response
  }
  const cookie = () => [...jar].map(([name, value]) => `${name}=${value}`).join('; ')
  const send = async (path: string, init: RequestInit = {}) =>
    keep(
      await fetch(new URL(path, base), {
        redirect: 'manual',
        ...init,
        headers: { ...(init.headers as Record<string, string>), cookie: cookie() },
      })
    )
  return {
    jar,
    cookie,
    fetch: send,
    xsrf: () => jar.get('XSRF-TOKEN'),
    async pageToken(path = '/login') {
      const html = await (await send(path)).text()
      return /name="_csrf" value="([^"]+)"|name="csrf-token" content="([^"]+)"/
        .exec(html)!
        .slice(1)
        .find(Boolean)!
    },
    async signIn(email: string) {
      const token = await this.pageToken('/login')
      const response = await send('/login', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ _csrf: token, email }).toString(),
      })
      if (response.status !== 303) throw new Error(`sign-in: HTTP ${response.status}`)
    },
  }
}
