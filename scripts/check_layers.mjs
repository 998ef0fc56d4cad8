#!/usr/bin/env node
/**
 * The layering rules of `src/` (issue 9), checked with Node alone until dependency-cruiser is
 * installed: `.dependency-cruiser.cjs` states the same rules under the same names.
 *
 *   node scripts/check_layers.mjs [--report] [--root <dir>]
 *
 * Reads every `src/**\/*.ts` under `<dir>` (default: the repository), takes the specifiers of its
 * `import ... from '...'`, `export ... from '...'`, `import '...'` and `import('...')`, resolves
 * the relative ones, and prints each violation as `file -> import (resolved) [rule]`. Exits 1 when
 * there is one, unless `--report` (list only, exit 0).
 */
import { readdirSync, readFileSync, existsSync, statSync } from 'node:fs'
import { builtinModules } from 'node:module'
import { dirname, join, relative, resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'

const args = process.argv.slice(2)
const report = args.includes('--report')
const rootAt = args.indexOf('--root')
const root =
  rootAt >= 0 ? resolve(args[rootAt + 1]) : resolve(dirname(fileURLToPath(import.meta.url)), '..')

/** Every `.ts` file under `dir`, as root-relative paths with `/`. */
function sources(dir) {
  if (!existsSync(dir)) return []
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sources(path)
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')
      ? [relative(root, path).split(sep).join('/')]
      : []
  })
}

const STATIC =
  /(?:^|[\n;])[ \t]*(?:import|export)\s+(?:type\s+)?(?:[\w$*{}\s,]+?\s+from\s+)?['"]([^'"\n]+)['"]/g
const DYNAMIC = /\bimport\s*\(\s*['"]([^'"\n]+)['"]\s*\)/g

/** The module specifiers a source names (block comments and whole-line `//` comments dropped). */
export function specifiers(source) {
  const code = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^[ \t]*\/\/.*$/gm, '')
  return [...code.matchAll(STATIC), ...code.matchAll(DYNAMIC)].map((m) => m[1])
}

/** A relative specifier as a root-relative `.ts` path (`./x.js` -> `x.ts`), or `null` if none. */
function resolveLocal(from, spec) {
  const base = resolve(root, dirname(from), spec)
  const candidates = [
    base.replace(/\.js$/, '.ts'),
    base,
    `${base}.ts`,
    join(base, 'index.ts'),
  ]
  const found = candidates.find((c) => existsSync(c) && statSync(c).isFile()) ?? candidates[0]
  return relative(root, found).split(sep).join('/')
}

const under = (...prefixes) => (path) =>
  prefixes.some((p) => (p.endsWith('/') ? path.startsWith(p) : path === p))
const CORE = ['src/core/', 'src/errors.ts']
const BUILTINS = new Set(builtinModules)
const IO_PACKAGES = /^(node:|@adonisjs\/|(pg|mysql2|better-sqlite3|knex)(\/|$))/

/**
 * The rules: `from` picks the importing files; a local import breaks the rule when `allowLocal`
 * says no or `forbidLocal` says yes; a package import when `forbidPackage` says yes.
 */
export const RULES = [
  { name: 'core-only-core', from: under('src/core/'), allowLocal: under(...CORE) },
  {
    name: 'store-only-core-store',
    from: under('src/store/'),
    allowLocal: under(...CORE, 'src/store/'),
  },
  {
    name: 'follow-only-core-store-follow',
    from: under('src/follow/'),
    allowLocal: under(...CORE, 'src/store/', 'src/follow/'),
  },
  {
    name: 'sink-only-core-store-follow-sink',
    from: under('src/sink/'),
    allowLocal: under(...CORE, 'src/store/', 'src/follow/', 'src/sink/', 'src/defaults.ts'),
  },
  {
    name: 'parking-not-runner-agui-http',
    from: under('src/parking/'),
    forbidLocal: under('src/runner/', 'src/agui/', 'src/http/'),
  },
  {
    name: 'agui-translate-pure',
    from: under('src/agui/translate/'),
    allowLocal: under(...CORE, 'src/agui/ids.ts', 'src/agui/translate/'),
    forbidPackage: (spec) => IO_PACKAGES.test(spec) || BUILTINS.has(spec.split('/')[0]),
  },
  {
    name: 'http-framework-only-in-transport',
    from: (path) => !under('src/http/', 'src/agent_stream.ts', 'src/define_config.ts')(path),
    forbidPackage: (spec) => spec === '@adonisjs/core/http',
  },
  {
    name: 'http-only-from-transport',
    from: (path) => !under('src/http/', 'src/agent_stream.ts')(path),
    forbidLocal: under('src/http/'),
  },
]

/** Cycles among local files (Tarjan's strongly connected components; one cycle shown per SCC). */
function cycles(graph) {
  let index = 0
  const stack = []
  const meta = new Map()
  const found = []
  const visit = (node) => {
    meta.set(node, { index, low: index, onStack: true })
    index++
    stack.push(node)
    for (const next of graph.get(node) ?? []) {
      if (!graph.has(next)) continue
      if (!meta.has(next)) {
        visit(next)
        meta.get(node).low = Math.min(meta.get(node).low, meta.get(next).low)
      } else if (meta.get(next).onStack) {
        meta.get(node).low = Math.min(meta.get(node).low, meta.get(next).index)
      }
    }
    if (meta.get(node).low !== meta.get(node).index) return
    const component = []
    let member
    do {
      member = stack.pop()
      meta.get(member).onStack = false
      component.push(member)
    } while (member !== node)
    const inside = new Set(component)
    if (component.length > 1 || graph.get(node).has(node)) {
      found.push({ cycle: path(graph, node, inside), size: component.length })
    }
  }
  for (const node of graph.keys()) if (!meta.has(node)) visit(node)
  return found
}

/** A shortest path from `start` back to itself inside one component (breadth first). */
function path(graph, start, inside) {
  const previous = new Map()
  const queue = [start]
  while (queue.length > 0) {
    const node = queue.shift()
    for (const next of graph.get(node)) {
      if (!inside.has(next)) continue
      if (next === start) {
        const cycle = [start]
        for (let at = node; at !== start; at = previous.get(at)) cycle.splice(1, 0, at)
        return [...cycle, start]
      }
      if (!previous.has(next)) {
        previous.set(next, node)
        queue.push(next)
      }
    }
  }
  return [start, start]
}

const files = sources(join(root, 'src')).sort()
const graph = new Map()
const violations = []
for (const file of files) {
  const edges = new Set()
  graph.set(file, edges)
  for (const spec of specifiers(readFileSync(join(root, file), 'utf8'))) {
    const local = spec.startsWith('.') ? resolveLocal(file, spec) : null
    if (local) edges.add(local)
    for (const rule of RULES) {
      if (!rule.from(file)) continue
      const broken = local
        ? (rule.allowLocal && !rule.allowLocal(local)) || rule.forbidLocal?.(local)
        : rule.forbidPackage?.(spec)
      if (broken) violations.push(`${file} -> ${spec}${local ? ` (${local})` : ''} [${rule.name}]`)
    }
  }
}
for (const { cycle, size } of cycles(graph)) {
  const more = size > cycle.length - 1 ? ` (one of the cycles among ${size} files)` : ''
  violations.push(`${cycle.join(' -> ')}${more} [no-circular]`)
}

if (violations.length > 0) {
  console.log(violations.join('\n'))
  console.log(`${violations.length} layering violation(s) in ${files.length} files`)
} else {
  console.log(`Layers ok: ${files.length} files`)
}
process.exitCode = violations.length > 0 && !report ? 1 : 0
