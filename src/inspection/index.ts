export { inspectRun } from './run_inspection.js'
export type { RunInspection, InspectedHead } from './run_inspection.js'
export { summarizeRow } from './summary.js'
export { runDeliveries, type InspectedDelivery } from './deliveries.js'
