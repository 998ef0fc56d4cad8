/**
 * What each AG-UI client version can parse (`profile.ts`) and the door's events mapped for it
 * (`for_client.ts`): a pure step after translation, applied by the transport per request.
 */
export {
  clientProfile,
  declaredProfile,
  CLIENT_VERSION_HEADER,
  DEFAULT_CLIENT_VERSION,
  type ClientProfile,
} from './profile.js'
export { forClient } from './for_client.js'
