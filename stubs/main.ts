/** Where the package's stubs live (a filesystem path, as `makeUsingStub` expects). */
export const stubsRoot = import.meta.dirname
