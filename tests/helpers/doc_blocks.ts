import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'

/** One fenced TypeScript block of a Markdown file: where it is and what it says. */
export interface DocBlock {
  file: string
  /** 1-based line of the opening fence. */
  line: number
  lang: 'ts' | 'tsx'
  code: string
}

const FENCE = /^```(\w*)\s*$/

/** Every ```ts / ```tsx block of one Markdown text, in order. */
export function blocksOf(file: string, text: string): DocBlock[] {
  const blocks: DocBlock[] = []
  const lines = text.split('\n')
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i])
    if (!open) continue
    const start = i
    const body: string[] = []
    for (i++; i < lines.length && !/^```\s*$/.test(lines[i]); i++) body.push(lines[i])
    const lang = open[1]
    if (lang === 'ts' || lang === 'typescript' || lang === 'tsx') {
      blocks.push({
        file,
        line: start + 1,
        lang: lang === 'tsx' ? 'tsx' : 'ts',
        code: body.join('\n'),
      })
    }
  }
  return blocks
}

/** The README and every page under docs/: the Markdown a reader of the package follows. */
export async function docFiles(root: string) {
  const pages = (await readdir(join(root, 'docs'), { recursive: true })).filter((name) =>
    name.endsWith('.md')
  )
  return ['README.md', ...pages.sort().map((name) => join('docs', name))]
}

export async function allBlocks(root: string) {
  const blocks: DocBlock[] = []
  for (const file of await docFiles(root)) {
    blocks.push(...blocksOf(file, await readFile(join(root, file), 'utf8')))
  }
  return blocks
}

/** GitHub's anchor for a heading: lower case, punctuation but `-` and `_` dropped, spaces as `-`. */
export function anchorOf(heading: string) {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\- _]/gu, '')
    .replace(/ /g, '-')
}

/** The anchors of a Markdown text's headings (outside code fences). */
export function anchorsOf(text: string) {
  const anchors = new Set<string>()
  let fenced = false
  for (const line of text.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced
    const heading = /^#{1,6} (.+)$/.exec(line)
    if (heading && !fenced) anchors.add(anchorOf(heading[1]))
  }
  return anchors
}

/** Every relative link target (`path`, `path#anchor`, `#anchor`) of a Markdown text. */
export function linksOf(text: string) {
  return [...text.matchAll(/\]\(([^)\s]+)\)/g)]
    .map((match) => match[1])
    .filter((target) => !/^[a-z]+:/.test(target))
}
