/**
 * Terminal demo effects. Each effect fills an RGB framebuffer of width × (2 × rows) pixels;
 * `renderFrame` draws two pixel rows per text row with U+2580 (upper half block): foreground
 * colour = top pixel, background colour = bottom pixel, in 24-bit ANSI colour.
 */

export interface Frame {
  readonly width: number
  readonly height: number
  readonly rgb: Uint8Array
}

export type Effect = (frame: Frame, t: number) => void

const clamp = (v: number): number => (v < 0 ? 0 : v > 255 ? 255 : v | 0)

const set = (frame: Frame, x: number, y: number, r: number, g: number, b: number): void => {
  const i = (y * frame.width + x) * 3
  frame.rgb[i] = clamp(r)
  frame.rgb[i + 1] = clamp(g)
  frame.rgb[i + 2] = clamp(b)
}

/** Classic sine plasma with a cycling palette. */
export const plasma = (): Effect => (frame, t) => {
  const time = t * 0.08
  for (let y = 0; y < frame.height; y++) {
    for (let x = 0; x < frame.width; x++) {
      const v =
        Math.sin(x * 0.11 + time) +
        Math.sin((y * 0.17 + time) * 0.9) +
        Math.sin((x * 0.07 + y * 0.09 + time) * 1.3) +
        Math.sin(Math.sqrt((x - frame.width / 2) ** 2 + (y - frame.height / 2) ** 2) * 0.15 - time)
      const p = v * Math.PI * 0.5
      set(
        frame,
        x,
        y,
        128 + 127 * Math.sin(p),
        128 + 127 * Math.sin(p + (2 * Math.PI) / 3),
        128 + 127 * Math.sin(p + (4 * Math.PI) / 3)
      )
    }
  }
}

/** Doom-style fire: heat rises from the bottom row, cooling and drifting randomly. */
export const fire = (): Effect => {
  let heat: Uint8Array | undefined
  let seed = 0x2545f491
  const random = (): number => {
    // xorshift32: deterministic, so two runs of the same size draw the same fire.
    seed ^= seed << 13
    seed ^= seed >>> 17
    seed ^= seed << 5
    return (seed >>> 0) / 0x1_0000_0000
  }
  const palette: Array<[number, number, number]> = Array.from({ length: 37 }, (_, i) => {
    const f = i / 36
    return [
      Math.min(255, f * 3 * 255),
      Math.max(0, Math.min(255, (f * 3 - 1) * 255)),
      Math.max(0, Math.min(255, (f * 3 - 2) * 255))
    ]
  })
  return (frame) => {
    const { width, height } = frame
    if (!heat || heat.length !== width * height) {
      heat = new Uint8Array(width * height)
      for (let x = 0; x < width; x++) heat[(height - 1) * width + x] = 36
    }
    for (let y = 1; y < height; y++) {
      for (let x = 0; x < width; x++) {
        const from = y * width + x
        const cool = Math.floor(random() * 3)
        const drift = Math.max(0, Math.min(width - 1, x - cool + 1))
        heat[(y - 1) * width + drift] = Math.max(0, heat[from]! - (cool & 1))
      }
    }
    for (let i = 0; i < width * height; i++) {
      const [r, g, b] = palette[heat[i]!]!
      frame.rgb[i * 3] = r
      frame.rgb[i * 3 + 1] = g
      frame.rgb[i * 3 + 2] = b
    }
  }
}

/** Amiga copper bars: shaded horizontal bars bouncing over a dark gradient. */
export const copper = (): Effect => (frame, t) => {
  const { width, height } = frame
  const rows = new Float32Array(height * 3)
  for (let y = 0; y < height; y++) {
    rows[y * 3] = 10
    rows[y * 3 + 1] = 10
    rows[y * 3 + 2] = 30 + (y / height) * 40
  }
  const colours: Array<[number, number, number]> = [
    [255, 60, 60],
    [255, 200, 40],
    [60, 255, 90],
    [50, 160, 255],
    [200, 80, 255]
  ]
  const barHeight = Math.max(4, Math.floor(height / 8))
  colours.forEach(([r, g, b], i) => {
    const centre = (height / 2) * (1 + Math.sin(t * 0.06 + i * 0.7)) * 0.85 + barHeight / 2
    for (let dy = -barHeight; dy <= barHeight; dy++) {
      const y = Math.round(centre + dy)
      if (y < 0 || y >= height) continue
      const shade = Math.cos((dy / barHeight) * (Math.PI / 2))
      rows[y * 3] = r * shade
      rows[y * 3 + 1] = g * shade
      rows[y * 3 + 2] = b * shade
    }
  })
  for (let y = 0; y < height; y++)
    for (let x = 0; x < width; x++) set(frame, x, y, rows[y * 3]!, rows[y * 3 + 1]!, rows[y * 3 + 2]!)
}

export const EFFECTS = { plasma, fire, copper } as const

/** ANSI text for one frame, starting at the top-left corner. */
export const renderFrame = (frame: Frame): string => {
  const { width, height, rgb } = frame
  const parts: string[] = ["\x1b[H"]
  for (let y = 0; y + 1 < height; y += 2) {
    for (let x = 0; x < width; x++) {
      const top = (y * width + x) * 3
      const bottom = ((y + 1) * width + x) * 3
      parts.push(
        `\x1b[38;2;${rgb[top]};${rgb[top + 1]};${rgb[top + 2]}m\x1b[48;2;${rgb[bottom]};${rgb[bottom + 1]};${rgb[bottom + 2]}m\u2580`
      )
    }
    parts.push(y + 2 < height ? "\x1b[0m\n" : "\x1b[0m")
  }
  return parts.join("")
}
