/**
 * The layering of `src/` (README, Layout): every import points down. `npm run lint` runs it:
 *
 *   npx depcruise src --config .dependency-cruiser.cjs
 */
const CORE = '^src/(core/|errors\\.ts$|defaults\\.ts$|telemetry/(otel\\.ts$|traces/|metrics/))'
const IO_PACKAGES = '(^|node_modules/)(@adonisjs/|pg/|mysql2/|better-sqlite3/|knex/)'

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'No import cycles among src files.',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'core-only-core',
      comment: 'src/core is the shared vocabulary: it imports only itself and src/errors.ts.',
      severity: 'error',
      from: { path: '^src/core/' },
      to: { dependencyTypes: ['local'], pathNot: CORE },
    },
    {
      name: 'telemetry-instruments-only-core',
      comment:
        'Spans and instruments (src/telemetry/otel.ts, traces/, metrics/) sit at the bottom beside core: every layer reports through them, they import only core and @opentelemetry/api.',
      severity: 'error',
      from: { path: '^src/telemetry/(otel\\.ts$|traces/|metrics/)' },
      to: { dependencyTypes: ['local'], pathNot: CORE },
    },
    {
      name: 'webhooks-only-core-store',
      comment:
        'The webhook outbox and its deliverer (src/telemetry/webhooks) stand on core and the store only: every layer records events through the LifecycleRecorder of src/core, never imports the deliverer.',
      severity: 'error',
      from: { path: '^src/telemetry/webhooks/' },
      to: { dependencyTypes: ['local'], pathNot: `${CORE}|^src/store/|^src/telemetry/webhooks/` },
    },
    {
      name: 'store-only-core-store',
      severity: 'error',
      from: { path: '^src/store/' },
      to: { dependencyTypes: ['local'], pathNot: `${CORE}|^src/store/` },
    },
    {
      name: 'follow-only-core-store-follow',
      severity: 'error',
      from: { path: '^src/follow/' },
      to: { dependencyTypes: ['local'], pathNot: `${CORE}|^src/(store|follow)/` },
    },
    {
      name: 'sink-only-core-store-follow-sink',
      severity: 'error',
      from: { path: '^src/sink/' },
      to: {
        dependencyTypes: ['local'],
        pathNot: `${CORE}|^src/(store|follow|sink)/|^src/defaults\\.ts$`,
      },
    },
    {
      name: 'parking-not-runner-agui-http',
      comment: 'Parking knows nothing of who resumes a run, nor of the door or the transport.',
      severity: 'error',
      from: { path: '^src/parking/' },
      to: { path: '^src/(runner|agui|http)/' },
    },
    {
      name: 'story-reads-only',
      comment: "A run's story reads through the sink and parking: never the runner, a door or HTTP.",
      severity: 'error',
      from: { path: '^src/story/' },
      to: { path: '^src/(runner|agui|http)/' },
    },
    {
      name: 'agui-translate-pure',
      comment: 'The translator is pure: core, errors, ids and itself.',
      severity: 'error',
      from: { path: '^src/agui/translate/' },
      to: { dependencyTypes: ['local'], pathNot: `${CORE}|^src/agui/ids\\.ts$|^src/agui/translate/` },
    },
    {
      name: 'agui-translate-pure',
      comment: 'No I/O in the translator: no Node built-in, no framework, no database driver.',
      severity: 'error',
      from: { path: '^src/agui/translate/' },
      to: { dependencyTypes: ['core'] },
    },
    {
      name: 'agui-translate-pure',
      severity: 'error',
      from: { path: '^src/agui/translate/' },
      to: { path: IO_PACKAGES },
    },
    {
      name: 'ui-message-translate-pure',
      comment: 'The UI message translator is pure: core, errors and itself.',
      severity: 'error',
      from: { path: '^src/ui_message/translate/' },
      to: { dependencyTypes: ['local'], pathNot: `${CORE}|^src/ui_message/translate/` },
    },
    {
      name: 'ui-message-translate-pure',
      comment: 'No I/O in the translator: no Node built-in, no framework, no database driver.',
      severity: 'error',
      from: { path: '^src/ui_message/translate/' },
      to: { dependencyTypes: ['core'] },
    },
    {
      name: 'ui-message-translate-pure',
      severity: 'error',
      from: { path: '^src/ui_message/translate/' },
      to: { path: IO_PACKAGES },
    },
    {
      name: 'checkpoints-below-doors',
      comment:
        'Translator checkpoints (src/checkpoints) serve both doors: core, defaults, the sink and itself; no door, no I/O of its own.',
      severity: 'error',
      from: { path: '^src/checkpoints/' },
      to: { dependencyTypes: ['local'], pathNot: `${CORE}|^src/(sink|checkpoints)/` },
    },
    {
      name: 'doors-apart',
      comment: 'The two protocol doors share the core below them, never each other.',
      severity: 'error',
      from: { path: '^src/ui_message/' },
      to: { path: '^src/agui/' },
    },
    {
      name: 'doors-apart',
      severity: 'error',
      from: { path: '^src/agui/' },
      to: { path: '^src/ui_message/' },
    },
    {
      name: 'http-framework-only-in-transport',
      comment: '@adonisjs/core/http only in src/http, src/agent_stream.ts, src/define_config.ts.',
      severity: 'error',
      from: {
        path: '^src/',
        pathNot: '^src/(http/|agent_stream\\.ts$|define_config\\.ts$)',
      },
      to: { path: '@adonisjs/core/build/modules/http/' },
    },
    {
      name: 'http-only-from-transport',
      comment:
        'Only src/http itself and src/agent_stream.ts reach into the transport (and the `/types` entry, for its types).',
      severity: 'error',
      from: {
        path: '^src/',
        pathNot: '^src/(http/|types/|agent_stream\\.ts$|define_config\\.ts$)',
      },
      to: { path: '^src/http/' },
    },
    {
      name: 'types-entry-types-only',
      comment: 'The `/types` entry (src/types) re-exports types only: it loads no code of ours.',
      severity: 'error',
      from: { path: '^src/types/' },
      to: { path: '^src/', pathNot: '^src/types/', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'ai-sdk-only-in-runners',
      comment:
        'The AI SDK (`ai`, an optional peer) is loaded only by the runners (src/runners: the `/ai-sdk` subpath, and runners that take AI SDK models or streams); elsewhere (the useChat door) its types only: the package root never loads it.',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/runners/' },
      to: { path: '(^|node_modules/)(ai|@ai-sdk/[^/]+)/', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'runners-are-leaves',
      comment:
        'Nothing of ours imports a runner (src/runners/<framework>): only the host app, through its subpath.',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/runners/' },
      to: { path: '^src/runners/' },
    },
    {
      name: 'runners-apart',
      comment:
        'Each runner folder is its own: it imports the package below it and src/runners/shared, never another framework\'s runner.',
      severity: 'error',
      from: { path: '^src/runners/([^/]+)/' },
      to: { path: '^src/runners/', pathNot: '^src/runners/($1|shared)/' },
    },
    {
      name: 'openai-agents-only-in-its-folder',
      comment: 'The OpenAI Agents SDK (an optional peer) is loaded only by src/runners/openai_agents.',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/runners/openai_agents/' },
      to: { path: '(^|node_modules/)@openai/agents[^/]*/', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'langgraph-only-in-its-folder',
      comment: 'LangGraph.js and LangChain (optional peers) are loaded only by src/runners/langgraph.',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/runners/langgraph/' },
      to: { path: '(^|node_modules/)@langchain/', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'mastra-only-in-its-folder',
      comment: 'Mastra (an optional peer) is loaded only by src/runners/mastra.',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/runners/mastra/' },
      to: { path: '(^|node_modules/)@mastra/', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'agui-client-only-in-runners',
      comment:
        'The AG-UI client (`@ag-ui/client`, an optional peer) is loaded only by the runners that run AG-UI agents and by the CopilotKit subpath.',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/(runners|copilotkit)/' },
      to: { path: '(^|node_modules/)@ag-ui/client/', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'copilotkit-runner-standalone',
      comment:
        'src/copilotkit (its own subpath) is an HTTP client of the routes: it loads nothing else of ours.',
      severity: 'error',
      from: { path: '^src/copilotkit/' },
      to: { dependencyTypes: ['local'], pathNot: '^src/copilotkit/' },
    },
    {
      name: 'nothing-imports-copilotkit',
      comment: 'CopilotKit is an optional peer: only its own subpath loads the runner.',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/copilotkit/' },
      to: { path: '^src/copilotkit/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'node'] },
  },
}
