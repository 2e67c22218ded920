import { Duration, Effect, Option, Schedule } from "effect"

export interface PollOptions<A, E2> {
  /** When to look again: `Schedule.spaced(...)`, an exponential backoff, … */
  readonly schedule: Schedule.Schedule<unknown, A>
  /** The condition is met: stop and return the value that met it. */
  readonly until: (value: A) => boolean
  /** The bound on the wait, counted from the first look. */
  readonly within: Duration.DurationInput
  readonly onTimeout: () => E2
}

/**
 * Runs `check` until its value satisfies `until`, looking again on `schedule`, and fails with
 * `onTimeout()` once `within` has passed after the first look (which is always made, however
 * little time is left). Time comes from the `Clock`, so `TestClock` drives a wait without any
 * real waiting. A failure of `check` ends the wait at once.
 */
export const pollUntil = <A, E, R, E2>(
  check: Effect.Effect<A, E, R>,
  options: PollOptions<A, E2>
): Effect.Effect<A, E | E2, R> => {
  const again = options.schedule.pipe(
    Schedule.passthrough,
    Schedule.whileInput((value: A) => !options.until(value))
  )
  return Effect.flatMap(check, (first) =>
    options.until(first)
      ? Effect.succeed(first)
      : Effect.scheduleFrom(check, first, again).pipe(
          Effect.timeoutFail({ duration: options.within, onTimeout: options.onTimeout })
        )
  )
}

const TIMED_OUT: unique symbol = Symbol("timed out")

/**
 * `pollUntil` for a wait whose running out is an answer, not a failure: the value that met
 * `until`, or none once `within` has passed.
 */
export const pollWithin = <A, E, R>(
  check: Effect.Effect<A, E, R>,
  options: Omit<PollOptions<A, never>, "onTimeout">
): Effect.Effect<Option.Option<A>, E, R> =>
  pollUntil(check, { ...options, onTimeout: (): typeof TIMED_OUT => TIMED_OUT }).pipe(
    Effect.map(Option.some),
    Effect.catchIf(
      (error): error is typeof TIMED_OUT => error === TIMED_OUT,
      () => Effect.succeed(Option.none<A>())
    )
  )

/** Milliseconds since `start` (a `Clock.currentTimeMillis` reading). */
export const elapsedSince = (start: number) =>
  Effect.map(
    Effect.clockWith((clock) => clock.currentTimeMillis),
    (now) => now - start
  )
