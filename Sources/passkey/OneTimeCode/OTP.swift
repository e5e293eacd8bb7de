import ArgumentParser
import Basics
import Foundation
import JSON
import PasskeyProvider
import PasskeyStoreIO
import TerminalIO

extension Passkey {
    /// `passkey otp`: one-time-code secrets beside the saved passwords (Docs/Passwords.md, "One-time codes").
    struct OTP: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "otp",
            abstract: "Keep the one-time-code (TOTP) secrets of your logins and show their codes.",
            discussion: """
                Secrets are kept in the passkey store, sealed under the store key like a password. A secret is \
                never given on the command line: `otp add` reads an otpauth://totp/ URI (or, with --secret, a bare \
                base32 secret) from standard input (asked without echo on a terminal, one line from a pipe) or \
                from --file. Codes follow RFC 6238: SHA1, SHA256 or SHA512, 6 to 8 digits, a period of 1 to 3600 \
                seconds. See Docs/Passwords.md.
                """,
            subcommands: [Add.self, Code.self, List.self, Delete.self])
    }
}

extension Passkey.OTP {
    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Save a login's one-time-code secret, read from standard input or a file.",
            discussion: """
                Reads one line: an otpauth://totp/ URI as a site's QR code holds it (its issuer, account name, \
                secret, algorithm, digits and period), or with --secret a bare base32 secret (SHA1, 6 digits, 30 \
                seconds). --site names the site as a saved password does; the user name is --user, else the URI's \
                account name. A login keeps the code it has: delete it first to replace it.
                """)

        @OptionGroup var store: StoreOptions
        @Option(help: ArgumentHelp("The site: a domain, an https:// origin or an app ID.", valueName: "site"))
        var site: String
        @Option(help: ArgumentHelp("The user name (default: the URI's account name).", valueName: "user"))
        var user: String?
        @Flag(help: "Read a bare base32 secret instead of an otpauth:// URI.") var secret = false
        @Option(
            help: ArgumentHelp("Read the URI or secret from this file instead of standard input.", valueName: "file"),
            completion: .file())
        var file: String?
        @OptionGroup var format: JSONOption

        func validate() throws {
            _ = try PasswordService.named(site)
            if let user { try PasswordPrompts.validateUserName(user) }
        }

        @OptionGroup var verbosity: OutputOptions

        func run() async throws {
            let service = try PasswordService.named(site)
            // Read before the store is unlocked: nothing is asked for a secret that is not there.
            let text = try await OTPInput.read(file: file, what: secret ? "secret" : "otpauth:// URI")
            let parsed = try OneTimeCodeVault.read(secret ? .secret(text) : .uri(text))
            let saved = try await OTPInput.withVault(store) { try $0.add(parsed, site: service, user: user) }
            if format.json {
                printJSON(JSONOutput.text(OneTimeCodeLines.json(saved)))
            } else {
                printLine(
                    "Saved the one-time code for \(PasswordPrompts.login(saved.userName, service)) (\(OneTimeCodeLines.parameters(saved)))."
                )
            }
        }
    }

    struct Code: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print a login's current one-time code and the seconds it stays valid.",
            discussion: """
                Prints the code on its own line first, then how many seconds are left (with --json: \
                {"code", "secondsLeft", "site", "user"}). A site with several codes needs --user.
                """)

        @OptionGroup var store: StoreOptions
        @Argument(help: "The site: a domain, an https:// origin or an app ID.") var site: String
        @Option(help: ArgumentHelp("The user name, when the site has several codes.", valueName: "user"))
        var user: String?
        @OptionGroup var format: JSONOption

        func validate() throws {
            _ = try PasswordService.named(site)
        }

        @OptionGroup var verbosity: OutputOptions

        func run() async throws {
            let service = try PasswordService.named(site)
            let (login, code, left) = try await OTPInput.withVault(store) { try $0.code(site: service, user: user) }
            if format.json {
                printJSON(JSONOutput.text(OneTimeCodeLines.codeJSON(login, code: code, secondsLeft: left)))
            } else {
                printLine(code)
                printLine("valid for \(left) more second\(left == 1 ? "" : "s")")
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the logins that have a one-time code (never the secrets).",
            discussion: "Unlocks the store; rows that fail their integrity check are listed as damaged.")

        @OptionGroup var store: StoreOptions
        @Option(help: ArgumentHelp("Only the codes of this site.", valueName: "site")) var site: String?
        @OptionGroup var format: JSONOption

        func validate() throws {
            if let site { _ = try PasswordService.named(site) }
        }

        @OptionGroup var verbosity: OutputOptions

        func run() async throws {
            let wanted = site.flatMap(PasswordService.init)
            let entries = try await OTPInput.withVault(store) { try $0.entries(site: wanted) }
            if format.json {
                printJSON(JSONOutput.text(JSONValue.array(entries.map { OneTimeCodeLines.json($0) })))
                return
            }
            guard !entries.isEmpty else {
                printLine(wanted.map { "No one-time codes for \($0.text.terminalSafe)." } ?? "No one-time codes.")
                return
            }
            entries.map(OneTimeCodeLines.line).forEach { printLine($0) }
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete a login's one-time code.",
            discussion: "Asks first (--yes does not). A damaged one can be deleted too.")

        @OptionGroup var store: StoreOptions
        @Argument(help: "The site: a domain, an https:// origin or an app ID.") var site: String
        @Argument(help: "The user name.") var user: String
        @OptionGroup var approval: ApprovalOptions

        func validate() throws {
            _ = try PasswordService.named(site)
        }

        @OptionGroup var verbosity: OutputOptions

        func run() async throws {
            let service = try PasswordService.named(site)
            try await OTPInput.withVault(store, approval: approval) { try await $0.delete(site: service, user: user) }
            printLine("Deleted the one-time code for \(PasswordPrompts.login(user, service)).")
        }
    }
}

/// How `passkey otp` reads its secret and reaches the vault.
enum OTPInput {
    /// The longest URI or secret read.
    static let limit = 8192

    /// One line: from `file`, else standard input, asked without echo when it is a terminal. Surrounding spaces go.
    static func read(file: String?, what: String) async throws -> String {
        if file == nil, isatty(STDIN_FILENO) == 1 {
            guard
                case .line(let line) = await Terminal.shared.readSecret(prompt: "The \(what): ", timeout: .seconds(600))
            else { throw ProviderError("nothing was typed; nothing saved") }
            return line.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let bytes: [UInt8]
        do {
            bytes = try CommandInput.read(file ?? "-", limit: limit, what: what)
        } catch {
            throw ProviderError(error.description)
        }
        guard bytes.count <= limit else { throw ProviderError("the \(what) is longer than \(limit) bytes") }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw ProviderError("the \(what) is not UTF-8 text")
        }
        let line = text.split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
        let trimmed = line.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty else { throw ProviderError("no \(what) was given; nothing saved") }
        return trimmed
    }

    static func withVault<T>(
        _ options: StoreOptions, approval: ApprovalOptions? = nil, _ body: (OneTimeCodeVault) async throws -> T
    ) async throws -> T {
        try await PasswordPrompts.withStore(options, approval: approval) { store, interface, mode, _ in
            try await body(OneTimeCodeVault(store: store, interface: interface, mode: mode, canAsk: interface.canAsk))
        }
    }
}
