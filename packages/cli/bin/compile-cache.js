"use strict"
// V8's code cache for stoat's bundles and the packages they require. Node 20 has no
// `module.enableCompileCache`, and every stoat process used to spend a fifth of its start-up
// compiling the same JavaScript. This compiles each CommonJS file under the given roots through
// `vm.Script` with the cached code of an earlier run, and after a first run without one saves what
// V8 compiled (lazily compiled functions included).
//
// On Node 20 a script compiled from cached data loses its dynamic-import callback
// (ERR_VM_DYNAMIC_IMPORT_CALLBACK_MISSING), so a file that mentions `import(` is left to Node; our
// bundles are built without any, so they are always cached.
//
// Entries are keyed by a hash of the path and source, so a rebuilt file never meets a stale entry.
// Any failure to read or write the cache only costs the speed-up. STOAT_COMPILE_CACHE=0 turns it off.
const Module = require("node:module")
const { createHash } = require("node:crypto")
const fs = require("node:fs")
const os = require("node:os")
const path = require("node:path")
const vm = require("node:vm")

/** At most this many entries (~20 MB) are kept: one build and its packages make about 150. */
const MAX_ENTRIES = 500
/** A process that outlives this (a server) saves its cache without waiting for its exit. */
const SAVE_AFTER_MS = 1500

const defaultCacheDir = () => {
  const base = process.env.XDG_CACHE_HOME || path.join(os.homedir(), ".cache")
  return path.join(base, "stoat", "v8", `${process.version}-${process.arch}`)
}

/** Code compiled without usable cached data, saved once the process has run for a while. */
const unsaved = []
/** What this process compiled from cached code (hits) and from source (misses); tests read it. */
const compileCacheStats = { hits: 0, misses: 0 }

const saveUnsaved = (cacheDir) => {
  if (unsaved.length === 0) return
  try {
    fs.mkdirSync(cacheDir, { recursive: true, mode: 0o700 })
    for (const { script, file } of unsaved.splice(0)) {
      const temporary = `${file}.${process.pid}.tmp`
      fs.writeFileSync(temporary, script.createCachedData(), { mode: 0o600 })
      fs.renameSync(temporary, file)
    }
    const entries = fs.readdirSync(cacheDir)
    if (entries.length > MAX_ENTRIES) {
      const byAge = entries
        .map((name) => ({ name, mtime: fs.statSync(path.join(cacheDir, name)).mtimeMs }))
        .sort((a, b) => a.mtime - b.mtime)
      for (const { name } of byAge.slice(0, entries.length - MAX_ENTRIES))
        fs.rmSync(path.join(cacheDir, name), { force: true })
    }
  } catch {
    // A read-only or full disk: the next run compiles from source, as Node itself would.
  }
}

/**
 * Routes the CommonJS compilation of every file under `roots` through the code cache.
 * Returns whether the cache is on.
 */
const enableCompileCache = (roots, cacheDir = process.env.STOAT_COMPILE_CACHE_DIR || defaultCacheDir()) => {
  if (process.env.STOAT_COMPILE_CACHE === "0") return false
  const prefixes = roots.map((root) => path.resolve(root) + path.sep)
  const compile = Module.prototype._compile
  Module.prototype._compile = function (content, filename) {
    // A script compiled from cached data loses its dynamic-import callback (see above): a file
    // that may call import() is left to Node.
    if (!prefixes.some((prefix) => filename.startsWith(prefix)) || content.includes("import("))
      return compile.call(this, content, filename)
    const file = path.join(cacheDir, createHash("sha1").update(filename).update("\0").update(content).digest("hex"))
    let cachedData
    try {
      cachedData = fs.readFileSync(file)
    } catch {
      cachedData = undefined
    }
    const script = new vm.Script(Module.wrap(content), { filename, cachedData })
    if (cachedData === undefined || script.cachedDataRejected) {
      compileCacheStats.misses++
      if (unsaved.length === 0) {
        process.once("exit", () => saveUnsaved(cacheDir))
        setTimeout(() => saveUnsaved(cacheDir), SAVE_AFTER_MS).unref()
      }
      unsaved.push({ script, file })
    } else compileCacheStats.hits++
    const moduleRequire = (id) => this.require(id)
    moduleRequire.resolve = (request, options) => Module._resolveFilename(request, this, false, options)
    moduleRequire.resolve.paths = (request) => Module._resolveLookupPaths(request, this)
    moduleRequire.main = process.mainModule
    moduleRequire.cache = Module._cache
    moduleRequire.extensions = Module._extensions
    return script
      .runInThisContext({ displayErrors: true })
      .call(this.exports, this.exports, moduleRequire, this, filename, path.dirname(filename))
  }
  return true
}

module.exports = { compileCacheStats, enableCompileCache }
