import ArgumentParser
import CTAP2
import Foundation
import PasskeyProvider
import PasskeySettings
import PasskeyStoreIO
import TerminalIO

/// A command that was given good arguments but could not do its work: no store there, a damaged index, a file that
/// holds no QR code.
///
/// Printed as every failure is (`ErrorLine`): `passkey: MESSAGE (hint)` on one line, the detail only with
/// `-v`/`--verbose`, and no usage text (that is for `ValidationError`, which only `validate()` throws: the arguments
/// themselves are wrong). Exits with `exitCode`, from the one table (`ExitStatus`, `Docs/ExitStatus.md`).
struct CommandFailure: Error, CustomStringConvertible {
    /// What went wrong, one sentence without a trailing period.
    var message: String
    /// What the user can do about it, if anything useful can be said.
    var hint: String?
    /// The underlying error's own description, for `--verbose`.
    var detail: String?
    var exitCode: Int32

    init(_ message: String, hint: String? = nil, detail: String? = nil, exitCode: Int32 = ExitStatus.failure) {
        self.message = message
        self.hint = hint
        self.detail = detail
        self.exitCode = exitCode
    }

    var description: String { ErrorLine(message, hint: hint).rendered() }
}

/// The person said no at a prompt, or a prompt was needed and nobody could answer: not a success.
struct Declined: Error {
    var message: String
}

extension Passkey {
    /// ArgumentParser's `main()`, except that every failure prints as one line `passkey: …` (`ErrorLine`) with the
    /// status from the one table (`ExitStatus`), Ctrl-C ends every command the same way (`Interruption`), and the
    /// settings are checked before any command runs. Help and the version print as ArgumentParser prints them.
    static func main() async {
        Interruption.install()
        var command: any ParsableCommand
        do {
            command = try parseAsRoot()
        } catch {
            parserExit(error)
        }
        // -q and -v, which every command has (`OutputOptions`), for every line printed from here on.
        OutputLevel.current =
            OutputOptions.of(command)?.level
            ?? OutputLevel(quiet: false, verbose: false, environment: ProcessInfo.processInfo.environment)
        let verbose = OutputLevel.current.showsDetails
        // Help (`passkey`, `--help`, `help COMMAND`: ArgumentParser's own command) needs no settings.
        let onlyHelp = command is Passkey || String(reflecting: type(of: command)).hasPrefix("ArgumentParser.")
        do {
            if !onlyHelp { _ = try processSettings() }
        } catch {
            fail(ErrorLine(error.message), status: ExitStatus.settings)
        }
        do {
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            guard let rendered = rendering(of: error) else { parserExit(error) }
            fail(rendered.0, status: rendered.1, verbose: verbose)
        }
    }

    /// Ends with one of ArgumentParser's own errors: help, the version and `ExitCode` as it ends them, a usage error
    /// as one line naming the command's help.
    static func parserExit(_ error: any Error) -> Never {
        let status = exitCode(for: error).rawValue
        guard status != ExitCode.success.rawValue, !(error is ExitCode) else { exit(withError: error) }
        let text = fullMessage(for: error)
        fail(ErrorLine.usage(text, helpCommand: ErrorLine.helpCommand(inParserMessage: text)), status: status)
    }

    /// The line and status for an error a command threw; nil for ArgumentParser's own errors (`ExitCode`,
    /// `CleanExit`, `ValidationError`, the help a command with subcommands asks for), which `parserExit` ends.
    static func rendering(of error: any Error) -> (ErrorLine, Int32)? {
        if String(reflecting: type(of: error)).hasPrefix("ArgumentParser.") { return nil }
        return switch error {
        case let failure as CommandFailure:
            (ErrorLine(failure.message, hint: failure.hint, detail: failure.detail), failure.exitCode)
        case let error as ProviderError:
            (ErrorLine(error.message, hint: error.hint), error.exitStatus)
        case let error as CredentialStoreError:
            (ErrorLine(error.message), ExitStatus.failure)
        case let error as SettingsError:
            (ErrorLine(error.message), ExitStatus.settings)
        case let declined as Declined:
            (ErrorLine(declined.message), ExitStatus.declined)
        default:
            (ErrorLine.unexplained(error, command: commandPath), ExitStatus.failure)
        }
    }

    /// `passkey client get`: the command as typed, without its options and arguments.
    static var commandPath: String {
        var names = ["passkey"]
        var current: any ParsableCommand.Type = Passkey.self
        for word in CommandLine.arguments.dropFirst() {
            guard let next = current.configuration.subcommands.first(where: { $0._commandName == word }) else { break }
            names.append(word)
            current = next
        }
        return names.joined(separator: " ")
    }

    static func fail(_ line: ErrorLine, status: Int32, verbose: Bool = false) -> Never {
        FileHandle.standardError.write(Data(line.rendered(verbose: verbose).utf8))
        Foundation.exit(status)
    }
}
