import { Effect, Ref } from "effect"
import type { ProjectRun as ProjectRunSchema } from "@stoat/wire"
import { toErrorInfo, type StoatError } from "../errors.js"
import { HintWording } from "../context/hint-wording.js"
import { ProjectLimits } from "../vm/limits.js"
import type { Declaration, Project } from "./file.js"

type ProjectRun = typeof ProjectRunSchema.Type

/**
 * Runs `step` for each declaration in declaration order; the first failure stops the run and
 * every VM not yet started is `skipped`. With `concurrency` > 1 independent VMs run side by side:
 * stoat.toml has no dependency field, so every declaration is independent and the order only
 * decides which start first and how the report reads. VMs already running when one fails finish.
 * The project's `[limits]` hold for everything the steps do.
 */
export const fanOut = <R>(
  project: Project,
  step: (declaration: Declaration) => Effect.Effect<unknown, StoatError, R>,
  options: { readonly concurrency?: number } = {}
): Effect.Effect<ProjectRun, never, R> =>
  Effect.gen(function* () {
    const failed = yield* Ref.make(false)
    const { words } = yield* HintWording
    const one = (declaration: Declaration) =>
      Effect.gen(function* () {
        const base = { key: declaration.key, name: declaration.name }
        if (yield* Ref.get(failed)) return { ...base, status: "skipped" as const }
        return yield* step(declaration).pipe(
          Effect.as({ ...base, status: "ok" as const }),
          Effect.catchAll((error) => {
            const info = toErrorInfo(error, words)
            return Effect.as(Ref.set(failed, true), {
              ...base,
              status: "error" as const,
              error: info.message,
              code: info.code
            })
          })
        )
      })
    const vms = yield* Effect.forEach(project.vms, one, { concurrency: Math.max(1, options.concurrency ?? 1) })
    return { project: project.name, vms }
  }).pipe(Effect.provideService(ProjectLimits, project.limits))
