/** The headless `useChat` of the demo's check (the AI SDK's transport and stream reader). */
export { headlessChat, textOf, toolParts } from '../../demo/headless_chat.js'
