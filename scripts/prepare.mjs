#!/usr/bin/env node
/**
 * The `prepare` script: builds the package (`npm run build`) when npm prepares this folder as a
 * dependency, that is an install from a git URL (`npm i github:owner/repo`) or a local folder
 * (`npm i ../checkout`, `--install-links` packs it), and on `npm install` / `npm ci` in a checkout.
 * Under `npm pack` and `npm publish` it does nothing: their `prepack` script has built already
 * (npm runs `prepack`, then `prepare`), so the build runs once.
 */
import { spawnSync } from 'node:child_process'

if (process.env.npm_command === 'pack' || process.env.npm_command === 'publish') process.exit(0)
const build = spawnSync('npm', ['run', 'build'], { stdio: 'inherit' })
process.exit(build.status ?? 1)
