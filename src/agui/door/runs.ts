/** The run rows the doors share (`src/store/door_runs.ts`), under the AG-UI door's names. */
export { AgUiRunStore, type AgUiRun } from '../../store/door_runs.js'
