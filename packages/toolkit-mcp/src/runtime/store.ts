import { Cause, Effect, Exit } from "effect"
import { ToolStoreLive, type ConfigDb, type ConfigStore, type OAuthProfiles, type Profiles } from "../store/index.js"
import { ToolkitError } from "./errors.js"

export type StoreServices = ConfigDb | ConfigStore | Profiles | OAuthProfiles

/**
 * Runs an Effect program against the user's config.db (one scoped SQLite handle for the
 * program, closed when it ends). An expected failure becomes a ToolkitError with its message.
 */
export const withStore = async <A, E extends { readonly message: string }>(
  configDb: string,
  program: Effect.Effect<A, E, StoreServices>
): Promise<A> => {
  const exit = await Effect.runPromiseExit(Effect.provide(program, ToolStoreLive(configDb)))
  if (Exit.isSuccess(exit)) return exit.value
  const failure = Cause.failureOption(exit.cause)
  if (failure._tag === "Some") throw new ToolkitError(failure.value.message)
  throw Cause.squash(exit.cause)
}
