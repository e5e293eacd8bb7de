import ArgumentParser
import Foundation
import TerminalIO

/// `-q`/`--quiet` and `-v`/`--verbose`, on every command with one meaning (`OutputLevel`, Docs/CommandLine.md):
/// quiet prints only the result and errors, verbose adds details and a failure's underlying cause.
struct OutputOptions: ParsableArguments {
    @Flag(name: .shortAndLong, help: "Print only the result and errors (no progress or notes).")
    var quiet = false
    @Flag(
        name: .shortAndLong,
        help: "Print details, and after an error line its underlying cause (also PASSKEY_VERBOSE=1).")
    var verbose = false

    func validate() throws {
        if quiet && verbose { throw ValidationError("--quiet and --verbose exclude each other") }
    }

    /// The level these flags and `PASSKEY_VERBOSE` ask for.
    var level: OutputLevel {
        OutputLevel(quiet: quiet, verbose: verbose, environment: ProcessInfo.processInfo.environment)
    }

    /// The flags of `command`, a command as parsed: every command of `passkey` declares them (`--help` shows them,
    /// Tests/Interop/test_cli.py checks it); nil for ArgumentParser's own help command.
    static func of(_ command: any ParsableCommand) -> OutputOptions? {
        Mirror(reflecting: command).children.lazy.compactMap { ($0.value as? OptionGroup<OutputOptions>)?.wrappedValue }
            .first
    }
}

/// `--json`, on every command that reports something: one JSON document on standard output instead of text, its
/// keys in one style (Docs/CommandLine.md, "JSON output"). Progress and questions stay on standard error.
struct JSONOption: ParsableArguments {
    @Flag(help: "Print one JSON document on standard output instead of text.")
    var json = false
}
