import { table } from "../render.js"

/** The plan as `apply --dry-run` and `plan` print it. */
export const renderPlan = (
  plan: ReadonlyArray<{ readonly name: string; readonly action: string; readonly reason: string }>
): string =>
  plan.length === 0
    ? "no recipes configured"
    : table(
        ["RECIPE", "ACTION", "REASON"],
        plan.map((step) => [step.name, step.action, step.reason])
      )
