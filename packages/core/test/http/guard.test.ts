import { describe, expect, it } from "vitest"
import { checkRequest, isLoopbackHost, parseLoopbackAddress } from "../../src/http/index.js"

describe("parseLoopbackAddress", () => {
  it("accepts exactly the loopback names with a port", () => {
    expect(parseLoopbackAddress("127.0.0.1:7777")).toEqual({ host: "127.0.0.1", port: 7777 })
    expect(parseLoopbackAddress("[::1]:7801")).toEqual({ host: "::1", port: 7801 })
    expect(parseLoopbackAddress("LOCALHOST:0")).toEqual({ host: "localhost", port: 0 })
  })

  it("refuses other interfaces, missing ports and bad ports with a message", () => {
    for (const text of ["0.0.0.0:7777", "[::]:7777", ":7777", "10.0.0.1:80", "127.0.0.2:80", "evil.example.com:80"]) {
      expect(parseLoopbackAddress(text), text).toMatchObject({ error: expect.stringMatching(/must be loopback/) })
    }
    for (const text of ["7777", "127.0.0.1", "::1:80", ""])
      expect(parseLoopbackAddress(text), text).toMatchObject({ error: expect.stringMatching(/not an address/) })
    expect(parseLoopbackAddress("127.0.0.1:65536")).toMatchObject({ error: expect.stringMatching(/out of range/) })
  })
})

describe("checkRequest", () => {
  it("lets loopback Host and Origin through, with or without a port", () => {
    for (const host of ["localhost", "localhost:7777", "127.0.0.1:1", "[::1]:7777", "[::1]"])
      expect(checkRequest({ host }).ok, host).toBe(true)
    expect(checkRequest({ host: "127.0.0.1:7777", origin: "http://localhost:3000" }).ok).toBe(true)
    expect(checkRequest({ host: "127.0.0.1:7777", origin: "https://[::1]" }).ok).toBe(true)
  })

  it("answers 403 for a foreign or missing Host and a foreign, opaque or malformed Origin", () => {
    for (const headers of [
      { host: "evil.example.com" },
      { host: "evil.example.com:7777" },
      {},
      { host: "localhost.evil.com" },
      { host: "127.0.0.1", origin: "http://evil.example.com" },
      { host: "127.0.0.1", origin: "null" },
      { host: "127.0.0.1", origin: "::" }
    ]) {
      expect(checkRequest(headers), JSON.stringify(headers)).toMatchObject({ ok: false, status: 403 })
    }
  })

  it("answers 401 without the bearer token, after the Host/Origin check", () => {
    const options = { token: "t0ken" }
    expect(checkRequest({ host: "localhost" }, options)).toMatchObject({
      ok: false,
      status: 401,
      headers: { "www-authenticate": "Bearer" }
    })
    expect(checkRequest({ host: "localhost", authorization: "Bearer nope" }, options)).toMatchObject({
      ok: false,
      status: 401
    })
    expect(checkRequest({ host: "localhost", authorization: "Basic t0ken" }, options)).toMatchObject({
      ok: false,
      status: 401
    })
    expect(checkRequest({ host: "localhost", authorization: "Bearer t0ken" }, options).ok).toBe(true)
    expect(checkRequest({ host: "evil.example.com", authorization: "Bearer t0ken" }, options)).toMatchObject({
      ok: false,
      status: 403
    })
  })
})

describe("isLoopbackHost", () => {
  it("is true for localhost, 127.0.0.0/8 and ::1 in any spelling, false for anything else", () => {
    for (const host of [
      "localhost",
      "LOCALHOST",
      "127.0.0.1",
      "127.9.8.7",
      "::1",
      "[::1]",
      "0:0:0:0:0:0:0:1",
      "::ffff:127.0.0.1",
      "[::ffff:127.0.0.2]"
    ])
      expect(isLoopbackHost(host), host).toBe(true)
    for (const host of [
      "0.0.0.0",
      "::",
      "10.0.0.1",
      "128.0.0.1",
      "::ffff:10.0.0.1",
      "localhost.evil.com",
      "evil.example.com",
      ""
    ])
      expect(isLoopbackHost(host), host).toBe(false)
  })
})

describe("checkRequest with the toolkit's rules", () => {
  it("accepts any literal loopback address in Host and Origin (a server bound to 127.0.0.2)", () => {
    expect(checkRequest({ host: "127.0.0.2:5100" }).ok).toBe(true)
    expect(checkRequest({ host: "127.0.0.2:5100", origin: "http://127.0.0.2:5100" }).ok).toBe(true)
    expect(checkRequest({ host: "127.0.0.2:5100", origin: "http://evil.example.com" })).toMatchObject({
      ok: false,
      status: 403
    })
  })

  it("checks neither Host nor Origin for a server bound beyond loopback with allowRemote, but still the token", () => {
    expect(checkRequest({ host: "192.168.1.5:5100", origin: "http://192.168.1.9" }, { allowRemote: true }).ok).toBe(
      true
    )
    expect(checkRequest({}, { allowRemote: true }).ok).toBe(true)
    expect(checkRequest({ host: "192.168.1.5:5100" }, { allowRemote: true, token: "t0ken" })).toMatchObject({
      ok: false,
      status: 401
    })
    expect(checkRequest({ host: "192.168.1.5:5100" })).toMatchObject({ ok: false, status: 403 })
  })
})
