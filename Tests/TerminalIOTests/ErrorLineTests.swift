import Foundation
import JSON
import PasskeySettings
import Testing

@testable import TerminalIO

/// The one error line every command prints, and `passkey config`'s lines.
struct ErrorLineTests {
    @Test func aFailureIsOneLineWithItsHintInParentheses() {
        #expect(ErrorLine("no passkey store at /s").rendered() == "passkey: no passkey store at /s\n")
        #expect(
            ErrorLine("no passkey store at /s", hint: "Create one with `passkey init`.").rendered()
                == "passkey: no passkey store at /s (create one with `passkey init`)\n")
        // A line break inside a part is folded, control characters are escaped: still one line.
        let folded = ErrorLine("cannot read\nthe file \u{1B}[2K", hint: "Try\nagain").rendered()
        #expect(folded == "passkey: cannot read; the file \\u{1B}[2K (try; again)\n")
        #expect(folded.filter { $0 == "\n" }.count == 1)
    }

    @Test func theDetailIsShownOnlyWhenVerbose() {
        let line = ErrorLine("passkey scan failed", detail: "IOError: connection reset (errno: 104)")
        #expect(line.rendered() == "passkey: passkey scan failed\n")
        #expect(
            line.rendered(verbose: true)
                == "passkey: passkey scan failed\npasskey: detail: IOError: connection reset (errno: 104)\n")
    }

    struct OwnError: Error, CustomStringConvertible {
        var description: String { "wrong PIN: 7 tries left" }
    }

    /// An error no command put into words: ours by its description, a library's only by the command's name (issue 24:
    /// "connection reset (error set): Connection refused) (errno: 111)", a TLS dump with a build path).
    @Test func aLibrarysErrorNamesOnlyTheCommandAndKeepsItsDescriptionForVerbose() throws {
        #expect(
            ErrorLine.unexplained(OwnError(), command: "passkey debug").rendered()
                == "passkey: wrong PIN: 7 tries left\n")
        let decoding = DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "/work/x.swift:12 errno 5"))
        let line = ErrorLine.unexplained(decoding, command: "passkey scan")
        #expect(line.rendered() == "passkey: passkey scan failed (run it again with -v for the details)\n")
        let verbose = line.rendered(verbose: true)
        #expect(
            verbose.hasPrefix("passkey: passkey scan failed (run it again with -v for the details)\npasskey: detail: ")
        )
        #expect(verbose.contains("/work/x.swift:12 errno 5"))
        #expect(
            ErrorLine.unexplained(CocoaError(.fileNoSuchFile), command: "passkey list").message == "passkey list failed"
        )
        #expect(ErrorLine.ownModule(of: OwnError()) == "TerminalIOTests")
    }

    @Test func aUsageErrorLosesTheParsersPrefixAndUsageText() {
        let parser = """
            Error: Unknown option '--no-such-option'
            Usage: passkey delete <credential-id> [--store <path>] [--yes]
              See 'passkey delete --help' for more information.
            """
        let command = ErrorLine.helpCommand(inParserMessage: parser)
        #expect(command == "passkey delete")
        #expect(
            ErrorLine.usage(parser, helpCommand: command).rendered()
                == "passkey: unknown option '--no-such-option' (see `passkey delete --help`)\n")
        #expect(
            ErrorLine.usage("--timeout must be between 0 and 3600 s.", helpCommand: nil).rendered()
                == "passkey: --timeout must be between 0 and 3600 s\n")
    }

    @Test func configShowsEachValueAndItsSource() throws {
        let settings = try Settings(
            flags: [.timeout: "5"], environment: ["PASSKEY_RELAY": "wss://relay.example"],
            file: SettingsFile(path: "/c/settings.toml", values: [.radio: "sim"]), defaultStore: "/d/passkeys.sqlite")
        #expect(
            SettingsLines.lines(settings, file: "/c/settings.toml", filePresent: true) == [
                "settings file: /c/settings.toml",
                "store              /d/passkeys.sqlite   default",
                "relay              wss://relay.example  environment PASSKEY_RELAY",
                "relay-ca           none                 default",
                "radio              sim:127.0.0.1:47250  file",
                "timeout            5                    flag --timeout",
                "consent            auto                 default",
                "consent-uv-window  5                    default",
                "consent-timeout    60                   default",
            ])
        let json = String(
            decoding: SettingsLines.json(settings, file: "/c/settings.toml", filePresent: true).serialized(),
            as: UTF8.self)
        #expect(
            json
                == #"{"file":"/c/settings.toml","filePresent":true,"settings":{"store":{"value":"/d/passkeys.sqlite","source":"default"},"relay":{"value":"wss://relay.example","source":"environment"},"relay-ca":{"value":null,"source":"default"},"radio":{"value":"sim:127.0.0.1:47250","source":"file"},"timeout":{"value":"5","source":"flag"},"consent":{"value":"auto","source":"default"},"consent-uv-window":{"value":"5","source":"default"},"consent-timeout":{"value":"60","source":"default"}}}"#
        )
    }
}
