import type { DoorState } from '../../door/index.js'

/**
 * The useChat door's translator state (`UiMessageTranslator.checkpoint()`) is JSON already: the
 * codec keeps the text as it is.
 */
export const UI_MESSAGE_STATE_CODEC: DoorState<string>['codec'] = {
  encode: (state) => state,
  decode: (text) => text,
}

/** How the useChat door's translator state is stored: under `ui-message`, as its JSON. */
export const UI_MESSAGE_STATE: DoorState<string> = {
  door: 'ui-message',
  codec: UI_MESSAGE_STATE_CODEC,
}
