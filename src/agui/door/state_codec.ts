import type { DoorState } from '../../door/index.js'
import type { TranslatorCheckpoint } from '../translate/index.js'

/**
 * A {@link TranslatorCheckpoint} as JSON and back: its model's open calls (a Map) as an
 * array of entries, the components it remembers (a Set) as an array, oldest first; the rest
 * is plain data already.
 */
export const AGUI_STATE_CODEC: DoorState<TranslatorCheckpoint>['codec'] = {
  encode: (state) =>
    JSON.stringify({
      ...state,
      model: {
        ...state.model,
        calls: [...state.model.calls],
        components: [...state.model.components],
      },
    }),
  decode: (text) => {
    const state = JSON.parse(text)
    state.model.calls = new Map(state.model.calls)
    state.model.components = new Set(state.model.components)
    return state as TranslatorCheckpoint
  },
}

/** How the AG-UI door's translator state is stored: under `agui`, with {@link AGUI_STATE_CODEC}. */
export const AGUI_STATE: DoorState<TranslatorCheckpoint> = { door: 'agui', codec: AGUI_STATE_CODEC }
