import { existsSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import type { Progress } from "@modelcontextprotocol/sdk/types.js"
import { DEFAULT_RATE_LIMITS, RateLimiter, redact } from "../src/index.js"
import { dataOf, errorOf, inProcess, unreachableVm } from "./helpers.js"

describe("rate limits (seed 000: 30 per tool at 0.5/s, 60 shared at 2/s)", () => {
  it("uses the seed's defaults", () => {
    expect(DEFAULT_RATE_LIMITS).toEqual({ toolBurst: 30, toolRate: 0.5, burst: 60, rate: 2 })
  })

  it("refuses the 31st quick call to one tool, naming the tool and the retry delay, and refills at 0.5/s", async () => {
    let now = 0
    const h = await inProcess({ limits: DEFAULT_RATE_LIMITS, now: () => now })
    try {
      for (let i = 0; i < 30; i++) dataOf(await h.client.callTool({ name: "version", arguments: {} }))
      expect(errorOf(await h.client.callTool({ name: "version", arguments: {} }))).toEqual({
        code: "rate_limited",
        message: "rate limit reached for version; retry in about 2s",
        subject: "version",
        retry_after_ms: 2000
      })
      // Another tool still has its own bucket.
      dataOf(await h.client.callTool({ name: "list_vms", arguments: {} }))
      now += 1000
      expect(errorOf(await h.client.callTool({ name: "version", arguments: {} }))).toMatchObject({
        message: "rate limit reached for version; retry in about 1s",
        retry_after_ms: 1000
      })
      now += 1000
      dataOf(await h.client.callTool({ name: "version", arguments: {} }))
      expect(errorOf(await h.client.callTool({ name: "version", arguments: {} })).code).toBe("rate_limited")
    } finally {
      await h.close()
    }
  })

  it("refuses the 61st call across tools for the server, and refills at 2/s", async () => {
    let now = 0
    const h = await inProcess({ limits: DEFAULT_RATE_LIMITS, now: () => now })
    try {
      for (const name of ["version", "list_vms"])
        for (let i = 0; i < 30; i++) dataOf(await h.client.callTool({ name, arguments: {} }))
      expect(errorOf(await h.client.callTool({ name: "list_images", arguments: {} }))).toEqual({
        code: "rate_limited",
        message: "rate limit reached for the server; retry in about 1s",
        subject: "server",
        retry_after_ms: 500
      })
      now += 500
      dataOf(await h.client.callTool({ name: "list_images", arguments: {} }))
    } finally {
      await h.close()
    }
  })

  it("checks both buckets before charging either: a refused call costs nothing", () => {
    const limiter = new RateLimiter({ toolBurst: 1, toolRate: 0, burst: 2, rate: 0 }, () => 0)
    expect(limiter.take("a").ok).toBe(true)
    expect(limiter.take("a")).toMatchObject({ ok: false, bucket: "tool" })
    // Had the refusal been charged to the shared bucket, b would be refused too.
    expect(limiter.take("b").ok).toBe(true)
    expect(limiter.take("c")).toMatchObject({ ok: false, bucket: "server" })
    expect(limiter.take("c")).toMatchObject({ ok: false, bucket: "server" })
  })

  it("audits a refused call as rate_limited without running it", async () => {
    const h = await inProcess({ limits: { toolBurst: 1, toolRate: 0 } })
    try {
      await h.client.callTool({ name: "vm_status", arguments: { vm: "a" } })
      const refused = errorOf(await h.client.callTool({ name: "vm_status", arguments: { vm: "a" } }))
      // A bucket that never refills gives no retry delay.
      expect(refused.code).toBe("rate_limited")
      expect(refused).not.toHaveProperty("retry_after_ms")
      const log = readFileSync(join(h.root, "logs", "stoat.log"), "utf8")
      expect(log).toMatch(/tool=vm_status entrypoint=mcp .*outcome=error:not_found/)
      expect(log).toMatch(/tool=vm_status entrypoint=mcp .*outcome=error:rate_limited/)
    } finally {
      await h.close()
    }
  })
})

describe("delete safety (seed 004): elicitation or an exact confirm argument", () => {
  const ACCEPT = (word: string) => () => ({ action: "accept" as const, content: { confirm: word } })

  it("asks through elicitation before destroy and goes ahead only on the VM's name", async () => {
    const h = await inProcess({ elicit: ACCEPT("doomed") })
    try {
      dataOf(await h.client.callTool({ name: "create", arguments: { name: "doomed", image: "tiny" } }))
      expect(dataOf(await h.client.callTool({ name: "destroy", arguments: { vm: "doomed" } }))).toEqual({
        name: "doomed",
        destroyed: true
      })
      expect(h.elicited).toHaveLength(1)
      expect(h.elicited[0]).toContain('Type "doomed"')
      dataOf(await h.client.callTool({ name: "create", arguments: { name: "kept", image: "tiny" } }))
      expect(errorOf(await h.client.callTool({ name: "destroy", arguments: { vm: "kept" } })).code).toBe(
        "confirmation_required"
      )
      expect(existsSync(join(h.root, "kept", "vm.toml"))).toBe(true)
      // A VM that does not exist is not_found without a question.
      expect(errorOf(await h.client.callTool({ name: "destroy", arguments: { vm: "ghost" } })).code).toBe("not_found")
      expect(h.elicited).toHaveLength(2)
    } finally {
      await h.close()
    }
  })

  it("treats a declined elicitation as not confirmed", async () => {
    const h = await inProcess({ elicit: () => ({ action: "decline" }) })
    try {
      dataOf(await h.client.callTool({ name: "create", arguments: { name: "kept", image: "tiny" } }))
      expect(errorOf(await h.client.callTool({ name: "destroy", arguments: { vm: "kept" } })).code).toBe(
        "confirmation_required"
      )
      expect(existsSync(join(h.root, "kept"))).toBe(true)
      // A dry-run prune deletes nothing and asks nothing; applying asks for "prune".
      dataOf(await h.client.callTool({ name: "prune", arguments: {} }))
      expect(h.elicited).toHaveLength(1)
      expect(errorOf(await h.client.callTool({ name: "prune", arguments: { apply: true } })).code).toBe(
        "confirmation_required"
      )
      expect(h.elicited[1]).toContain('Type "prune"')
    } finally {
      await h.close()
    }
  })

  it("answers in advance with confirm: the exact name goes ahead without asking, anything else is refused", async () => {
    const h = await inProcess({ elicit: ACCEPT("never-asked") })
    try {
      dataOf(await h.client.callTool({ name: "create", arguments: { name: "gone", image: "tiny" } }))
      expect(
        errorOf(await h.client.callTool({ name: "destroy", arguments: { vm: "gone", confirm: "Gone" } }))
      ).toMatchObject({ code: "confirmation_required" })
      dataOf(await h.client.callTool({ name: "destroy", arguments: { vm: "gone", confirm: "gone" } }))
      dataOf(await h.client.callTool({ name: "prune", arguments: { apply: true, confirm: "prune" } }))
      expect(errorOf(await h.client.callTool({ name: "prune", arguments: { confirm: "prune" } })).code).toBe("usage")
      expect(errorOf(await h.client.callTool({ name: "list_vms", arguments: { confirm: "x" } })).code).toBe("usage")
      expect(h.elicited).toHaveLength(0)
    } finally {
      await h.close()
    }
  })

  it("requires the exact confirm argument when the client cannot elicit, and says what to pass", async () => {
    const h = await inProcess()
    try {
      dataOf(await h.client.callTool({ name: "create", arguments: { name: "plain", image: "tiny" } }))
      dataOf(await h.client.callTool({ name: "snapshot", arguments: { vm: "plain", tag: "t1" } }))
      for (const [tool, args, word] of [
        ["destroy", { vm: "plain" }, "plain"],
        ["delete_snapshot", { vm: "plain", tag: "t1" }, "plain"],
        ["prune", { apply: true }, "prune"]
      ] as const) {
        const refused = errorOf(await h.client.callTool({ name: tool, arguments: args }))
        expect(refused).toMatchObject({ code: "confirmation_required", subject: word })
        expect(refused.message).toContain(`confirm="${word}"`)
      }
      expect(existsSync(join(h.root, "plain", "vm.toml"))).toBe(true)
      expect(
        dataOf(await h.client.callTool({ name: "list_snapshots", arguments: { vm: "plain" } })).snapshots
      ).toHaveLength(1)
      // A VM that does not exist is still not_found, not a request to confirm.
      expect(errorOf(await h.client.callTool({ name: "destroy", arguments: { vm: "ghost" } })).code).toBe("not_found")
      dataOf(
        await h.client.callTool({ name: "delete_snapshot", arguments: { vm: "plain", tag: "t1", confirm: "plain" } })
      )
      dataOf(await h.client.callTool({ name: "destroy", arguments: { vm: "plain", confirm: "plain" } }))
      expect(existsSync(join(h.root, "plain"))).toBe(false)
    } finally {
      await h.close()
    }
  })

  it("with --no-confirm goes ahead without asking when the client has no elicitation (the original contract)", async () => {
    const h = await inProcess({ confirmDeletions: false })
    try {
      dataOf(await h.client.callTool({ name: "create", arguments: { name: "plain", image: "tiny" } }))
      dataOf(await h.client.callTool({ name: "destroy", arguments: { vm: "plain" } }))
      // A wrong word is still refused: the flag drops the question, not the check of an answer.
      dataOf(await h.client.callTool({ name: "create", arguments: { name: "other", image: "tiny" } }))
      expect(
        errorOf(await h.client.callTool({ name: "destroy", arguments: { vm: "other", confirm: "nope" } })).code
      ).toBe("confirmation_required")
    } finally {
      await h.close()
    }
  })
})

describe("long work: progress and cancellation", () => {
  it("sends increasing progress notifications while a wait runs when the client gave a progress token", async () => {
    const h = await inProcess({ heartbeatMs: 50 })
    try {
      await unreachableVm(h.client, h.guest, "slow")
      const seen: Array<Progress> = []
      const result = await h.client.callTool(
        { name: "wait", arguments: { vm: "slow", timeout_seconds: 1 } },
        undefined,
        { onprogress: (p) => seen.push(p) }
      )
      expect(errorOf(result).code).toBe("timeout")
      expect(seen.length).toBeGreaterThan(0)
      for (let i = 1; i < seen.length; i++) expect(seen[i]!.progress).toBeGreaterThan(seen[i - 1]!.progress)
      expect(seen[0]!.total).toBe(1)
    } finally {
      await h.close()
    }
  })

  it("a cancelled call interrupts the operation (audited as canceled) and the server keeps serving", async () => {
    const h = await inProcess({ heartbeatMs: 50 })
    try {
      await unreachableVm(h.client, h.guest, "stuck")
      const controller = new AbortController()
      const call = h.client.callTool({ name: "wait", arguments: { vm: "stuck", timeout_seconds: 600 } }, undefined, {
        signal: controller.signal,
        onprogress: () => controller.abort()
      })
      await expect(call).rejects.toThrow()
      const log = join(h.root, "logs", "stoat.log")
      for (let i = 0; i < 100 && !/tool=wait .*outcome=error:canceled/.test(readFileSync(log, "utf8")); i++)
        await new Promise((r) => setTimeout(r, 50))
      expect(readFileSync(log, "utf8")).toMatch(/tool=wait entrypoint=mcp .* vm=stuck .*outcome=error:canceled/)
      dataOf(await h.client.callTool({ name: "version", arguments: {} }))
    } finally {
      await h.close()
    }
  })
})

describe("redaction of secret-named fields", () => {
  it("masks secrets, console_password, authkey, password and token at any depth as <set>/<unset>", () => {
    const masked = redact({
      a: { password: "x", token: "", list: [{ authkey: "k" }, { console_password: null }] },
      secrets: { r: { p: "v" } },
      other: "kept"
    })
    expect(masked).toEqual({
      a: { password: "<set>", token: "<unset>", list: [{ authkey: "<set>" }, { console_password: "<unset>" }] },
      secrets: "<set>",
      other: "kept"
    })
  })
})
