import { readdirSync, readFileSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"
import { describe, expect, it } from "vitest"

const SRC = resolve(import.meta.dirname, "../src")

const sourceFiles = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sourceFiles(join(dir, entry.name)) : entry.name.endsWith(".ts") ? [join(dir, entry.name)] : []
  )

/** The top-level folder of src a file is in; files directly in src (index, errors, layers) are "." and sit outside the layers. */
const folderOf = (file: string): string => {
  const parts = relative(SRC, file).split("/")
  return parts.length > 1 ? parts[0]! : "."
}

// Static, type-only and dynamic imports alike: a type import is still a dependency of the design.
const RELATIVE_IMPORT = /(?:\bfrom|\bimport)\s*\(?\s*["'](\.\.?\/[^"']+)["']/g

/** folder → folder it imports → one file:specifier that does it (for the message). */
const folderGraph = (): Map<string, Map<string, string>> => {
  const graph = new Map<string, Map<string, string>>()
  for (const file of sourceFiles(SRC)) {
    for (const [, specifier] of readFileSync(file, "utf8").matchAll(RELATIVE_IMPORT)) {
      const from = folderOf(file)
      const to = folderOf(resolve(dirname(file), specifier!))
      if (from === to || from === "." || to === ".") continue
      const edges = graph.get(from) ?? new Map<string, string>()
      if (!edges.has(to)) edges.set(to, `${relative(SRC, file)} imports ${specifier}`)
      graph.set(from, edges)
    }
  }
  return graph
}

/** Every cycle found by a depth-first walk, each as the folders around it with the import of each step. */
const cyclesOf = (graph: Map<string, Map<string, string>>): string[] => {
  const cycles: string[] = []
  const done = new Set<string>()
  const path: string[] = []
  const visit = (folder: string) => {
    const open = path.indexOf(folder)
    if (open >= 0) {
      const loop = [...path.slice(open), folder]
      cycles.push(
        loop
          .slice(1)
          .map((to, i) => `${loop[i]} -> ${to} (${graph.get(loop[i]!)!.get(to)})`)
          .join("; ")
      )
      return
    }
    if (done.has(folder)) return
    path.push(folder)
    for (const to of graph.get(folder)?.keys() ?? []) visit(to)
    path.pop()
    done.add(folder)
  }
  for (const folder of [...graph.keys()].sort()) visit(folder)
  return cycles
}

describe("core's folders are layers", () => {
  it("no two top-level folders of src import each other, directly or around a cycle", () => {
    expect(cyclesOf(folderGraph())).toEqual([])
  })

  it("the check sees a cycle when there is one", () => {
    const graph = new Map([
      ["vm", new Map([["lifecycle", "vm/a.ts imports ../lifecycle/b.js"]])],
      ["lifecycle", new Map([["vm", "lifecycle/b.ts imports ../vm/a.js"]])]
    ])
    expect(cyclesOf(graph)).toEqual([
      "lifecycle -> vm (lifecycle/b.ts imports ../vm/a.js); vm -> lifecycle (vm/a.ts imports ../lifecycle/b.js)"
    ])
  })

  it("sees the folders of src", () => {
    expect([...folderGraph().keys()]).toEqual(expect.arrayContaining(["lifecycle", "operations", "recipes", "vm"]))
  })
})
