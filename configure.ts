import { readdir } from 'node:fs/promises'
import type Configure from '@adonisjs/core/commands/configure'
import { stubsRoot } from './stubs/main.js'

/** Where the migration is published, relative to the app root (as the official packages do). */
const MIGRATIONS_FOLDER = 'database/migrations'

/** The published migration's file name, after its `<timestamp>_` prefix. */
const MIGRATION_SUFFIX = '_create_agent_stream_tables.ts'

/** The file name of an already published migration, or `null` (also when the folder is missing). */
async function publishedMigration(command: Configure): Promise<string | null> {
  try {
    const files = await readdir(command.app.makePath(MIGRATIONS_FOLDER))
    return files.find((file) => /^\d+_create_agent_stream_tables\.ts$/.test(file)) ?? null
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw error
  }
}

/**
 * `node ace configure adonis-agent-stream`: publishes `config/agent_stream.ts` and the tables'
 * migration, and registers the provider and the commands in `adonisrc.ts`.
 *
 * Running it again changes nothing: existing files are skipped and the migration is not published
 * a second time. With `--force` both files are overwritten in place (the migration keeps its
 * file name, so Lucid does not see it as a new one).
 */
export async function configure(command: Configure) {
  const codemods = await command.createCodemods()

  await codemods.makeUsingStub(stubsRoot, 'config/agent_stream.stub', {})

  const existing = await publishedMigration(command)
  if (existing && !command.force) {
    command.logger
      .action(`create ${MIGRATIONS_FOLDER}/${existing}`)
      .skipped('already published (--force overwrites it)')
  } else {
    await codemods.makeUsingStub(stubsRoot, 'make/migration/agent_stream_tables.stub', {
      migration: {
        folder: MIGRATIONS_FOLDER,
        fileName: existing ?? `${Date.now()}${MIGRATION_SUFFIX}`,
      },
    })
  }

  await codemods.updateRcFile((rcFile) => {
    rcFile.addProvider('adonis-agent-stream/agent_stream_provider')
    rcFile.addCommand('adonis-agent-stream/commands')
  })

  // No env validations: the package reads no environment variable (its database connection is
  // the app's Lucid config, its settings live in config/agent_stream.ts).
}
