import { table } from "../render.js"

/** The pins of a scope as `recipe lock|sync|update` print them. */
export const pinTable = (pins: ReadonlyArray<{ name: string; scope: string; ref: string; commit: string; source: string }>) =>
  table(["NAME", "SCOPE", "REF", "COMMIT", "SOURCE"], pins.map((pin) => [pin.name, pin.scope, pin.ref, pin.commit.slice(0, 7), pin.source]))
