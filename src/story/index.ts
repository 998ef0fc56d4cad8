export { gatherStory } from './story.js'
export type { RunStory, StoryHead } from './story.js'
export { summarizeRow } from './summary.js'
