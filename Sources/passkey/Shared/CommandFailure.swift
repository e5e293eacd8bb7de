import ArgumentParser
import CTAP2
import Foundation
import PasskeyProvider
import TerminalIO

/// A command that was given good arguments but could not do its work: no store there, a damaged index, a file that
/// holds no QR code.
///
/// Printed on standard error as `passkey: MESSAGE`, with an optional second line saying what to do, and no usage
/// text (that is for `ValidationError`, which only `validate()` throws: the arguments themselves are wrong). Exits
/// with `exitCode`, 1 unless a command documents another.
struct CommandFailure: Error, CustomStringConvertible {
    /// What went wrong, one sentence without a trailing period.
    var message: String
    /// What the user can do about it, if anything useful can be said.
    var hint: String?
    var exitCode: Int32

    init(_ message: String, hint: String? = nil, exitCode: Int32 = 1) {
        self.message = message
        self.hint = hint
        self.exitCode = exitCode
    }

    /// The lines as printed, without the `passkey: ` prefix of the first.
    var description: String {
        hint.map { "\(message)\n\($0)" } ?? message
    }

    /// The text written to standard error: escaped for the terminal (messages may quote file names and site data).
    var printed: String {
        var text = "passkey: \(message.terminalSafe)\n"
        if let hint { text += "\(hint.terminalSafe)\n" }
        return text
    }
}

extension Passkey {
    /// ArgumentParser's `main()`, except that a `CommandFailure` or a store error prints as `passkey: …` (with its
    /// hint) instead of `Error: …`. Everything else, usage errors included, goes to ArgumentParser as before.
    static func main() async {
        do {
            var command = try parseAsRoot()
            if var command = command as? any AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
        } catch let failure as CommandFailure {
            FileHandle.standardError.write(Data(failure.printed.utf8))
            Foundation.exit(failure.exitCode)
        } catch let error as ProviderError {
            FileHandle.standardError.write(
                Data(CommandFailure(error.message, hint: error.hint, exitCode: error.exitStatus).printed.utf8))
            Foundation.exit(error.exitStatus)
        } catch let error as CredentialStoreError {
            FileHandle.standardError.write(Data(CommandFailure(error.message).printed.utf8))
            Foundation.exit(1)
        } catch {
            exit(withError: error)
        }
    }
}
