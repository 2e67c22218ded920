import { createInterface } from "node:readline/promises"
import { Command } from "@oclif/core"
import { cliDataOf, type Operation } from "@stoat/core"
import type { ErrorInfo, ProjectRun } from "@stoat/wire"
import { renderProjectRun, runFailed } from "./views/project.js"
import { cliState } from "./state.js"
import { BASE_FLAGS } from "./base-flags.js"
import { executeShowingProgress, writeFailure, writeResult } from "./outcome.js"

type ProjectRunData = typeof ProjectRun.Type

/**
 * Every stoat command: parse flags, run one catalog operation, then render a table or the
 * `--json` envelope. No domain logic lives here.
 */
export abstract class StoatCommand extends Command {
  static override baseFlags = BASE_FLAGS

  protected get json(): boolean {
    return cliState.json
  }

  protected get commandName(): string {
    return cliState.cmd || this.id?.split(":")[0] || "stoat"
  }

  /** Runs the operation; on failure reports the error and exits 1 (never returns). */
  protected async call<I, O>(
    operation: Operation<I, O, any>,
    input: unknown,
    options: { interactive?: boolean; showProgress?: boolean } = {}
  ): Promise<O> {
    const outcome = await this.attempt(operation, input, options)
    if (!outcome.ok) return this.failWith(outcome.error)
    return outcome.value
  }

  /** Runs the operation and answers its outcome, failure included, for a command that reacts to it. */
  protected async attempt<I, O>(
    operation: Operation<I, O, any>,
    input: unknown,
    options: { interactive?: boolean; showProgress?: boolean } = {}
  ): Promise<{ ok: true; value: O } | { ok: false; error: ErrorInfo }> {
    return executeShowingProgress(operation, input, {
      json: this.json,
      cmd: this.commandName,
      showProgress: options.showProgress === true,
      ...(options.interactive !== undefined ? { interactive: options.interactive } : {})
    })
  }

  /**
   * Asks a person at a terminal to confirm a deletion (`question` ends in "?"); without one (or
   * with --json/-q) it is confirmation_required naming `subject`. Exits 1 on any answer but yes.
   */
  protected async confirmOrExit(question: string, subject: string, quiet: boolean): Promise<void> {
    if (this.json || quiet || process.stdin.isTTY !== true) {
      return this.failWith({
        code: "confirmation_required",
        message: `${question.replace(/\?$/, "")} needs confirmation; pass -y`,
        subject
      })
    }
    const prompt = createInterface({ input: process.stdin, output: process.stderr })
    const answer = await prompt.question(`${question} [y/N] `)
    prompt.close()
    if (!/^y(es)?$/i.test(answer.trim())) {
      process.stderr.write("not deleted\n")
      return this.exit(1)
    }
  }

  /**
   * Runs the operation and prints its result: with `--json` the envelope of the operation's CLI
   * view (reference §4), else whatever `render` writes for the result.
   */
  protected async show<I, O>(
    operation: Operation<I, O, any>,
    input: unknown,
    render: (output: O) => void,
    options: { interactive?: boolean; showProgress?: boolean } = {}
  ): Promise<O> {
    const output = await this.call(operation, input, options)
    // The input succeeded decoding, so it has the fields a view reads (vm, tag) as given.
    this.emit(cliDataOf(operation, output, input as I), () => render(output))
    return output
  }

  /** Prints the result: the envelope with `--json`, else whatever `render` writes. */
  protected emit(data: unknown, render: () => void): void {
    writeResult(this.json, this.commandName, data, render)
  }

  /**
   * A no-name fan-out over the project (`up`, `down`, `apply`, `wait`, `rm`): the whole report,
   * `ok` in JSON even when a VM failed, and exit 1 when one did.
   */
  protected async runProject<I>(
    operation: Operation<I, ProjectRunData, any>,
    input: unknown,
    done: string,
    options: { showProgress?: boolean } = {}
  ): Promise<void> {
    const run = await this.call(operation, input, options)
    this.emit(run, () => this.line(renderProjectRun(run, done)))
    if (runFailed(run)) this.exit(1)
  }

  protected failWith(error: ErrorInfo, exitCode?: number): never {
    const status = writeFailure(this.json, this.commandName, error)
    return this.exit(exitCode ?? status)
  }

  protected line(text = ""): void {
    process.stdout.write(`${text}\n`)
  }
}
