import ArgumentParser
import Basics
import Foundation
import PasskeyProvider
import PasskeyStoreIO

extension Passkey.Password {
    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Save a password for a service and user name.",
            discussion: """
                SERVICE is a domain (example.com), an https:// origin (https://example.com:8443) or an app ID \
                (ABCDE12345.com.example.app). The password comes from $PASSKEY_PASSWORD, else it is asked twice \
                without echo. Replacing a different saved password asks first (--yes does not ask). With --app, the \
                password is saved as that app would save it (SecAddSharedWebCredential): only for a domain that \
                approved the app for webcredentials; a new login is saved without asking, a change asks. \
                --generate saves a new strong password instead (--rules: one following the site's passwordrules \
                descriptor) and prints it on the last line, as a browser fills in the password it suggests.
                """)

        @OptionGroup var store: StoreOptions
        @Argument(help: "Where the password is used: a domain, an https:// origin or an app ID.") var service: String
        @Argument(help: "The user name.") var user: String
        @Option(help: ArgumentHelp("Save it as this app (TEAMID.bundle.id) would.", valueName: "app-id"))
        var app: String?
        @Option(
            help: ArgumentHelp("The domain approval table (default: beside the store).", valueName: "file"),
            completion: .file(extensions: ["json"]))
        var approvals: String?
        @OptionGroup var approval: ApprovalOptions
        @Flag(help: "Save a newly generated strong password, and print it.") var generate = false
        @Option(
            help: ArgumentHelp(
                "With --generate: follow this passwordrules descriptor instead.", valueName: "descriptor"))
        var rules: String?

        func validate() throws {
            if rules != nil, !generate { throw ValidationError("--rules goes with --generate.") }
            let parsed = try PasswordService.named(service)
            if app != nil, parsed.hostAndPort == nil {
                throw ValidationError("--app saves for a domain or an https:// origin, not for an app ID.")
            }
            try PasswordPrompts.validateUserName(user)
        }

        /// The new password --generate makes.
        func newPassword() async throws -> String {
            guard var random = BufferedSystemRandom() else { throw CommandFailure("cannot open /dev/urandom") }
            return try Passkey.Password.Generate.generator(format: nil, rules: rules)(&random)
        }

        @OptionGroup var verbosity: OutputOptions

        func run() async throws {
            let service = try PasswordService.named(service)
            // Made before anything is opened, so impossible rules change nothing.
            let generated = generate ? try await newPassword() : nil
            let saved = try await PasswordPrompts.withVault(store, approvals: approvals, approval: approval) {
                try await $0.add(service: service, user: user, app: app, password: generated.map { .given($0) } ?? .ask)
            }
            let login = PasswordPrompts.login(user, service)
            switch saved {
            case .added: printLine("Saved the password for \(login).")
            case .addedByApp: printLine("Saved the password for \(login) (from \(app ?? "")).")
            case .changed: printLine("Changed the password for \(login).")
            case .unchanged: printLine("The password for \(login) is already saved.")
            }
            // Shown once saved, never when nothing was.
            if let generated { printLine(generated) }
        }
    }

    struct Get: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print one saved password.",
            discussion: """
                Unlocks the store and prints the password alone on standard output: the one place passkey shows a \
                password. With several logins for SERVICE, name one with --user. Using a login ranks it first.

                --clip copies it to the desktop's clipboard instead (wl-copy under Wayland, xclip under X11; the \
                password goes to the command's input, never its arguments), waits --clear-after seconds (or \
                Ctrl-C), then clears the clipboard if it still holds the password: whatever you copied since is \
                left alone.
                """)

        @OptionGroup var store: StoreOptions
        @Argument(help: "The service: a domain, an https:// origin or an app ID.") var service: String
        @Option(help: "The user name, when the service has several logins.") var user: String?
        @Flag(help: "Copy the password to the clipboard instead of printing it, and clear it afterwards.")
        var clip = false
        @Option(help: ArgumentHelp("With --clip: seconds until the clipboard is cleared.", valueName: "seconds"))
        var clearAfter = 45

        func validate() throws {
            _ = try PasswordService.named(service)
            guard (1...86_400).contains(clearAfter) else {
                throw ValidationError("--clear-after must be between 1 and 86400 seconds.")
            }
        }

        @OptionGroup var verbosity: OutputOptions

        func run() async throws {
            let service = try PasswordService.named(service)
            // The clipboard is found before the store is unlocked: no passphrase is asked for nothing.
            let clipboard =
                try clip ? Clipboard(tool: ClipboardTool.choose(environment: ProcessInfo.processInfo.environment)) : nil
            let password = try await PasswordPrompts.withVault(store) { try $0.get(service: service, user: user) }
            guard let clipboard else {
                FileHandle.standardOutput.write(Data((password + "\n").utf8))
                return
            }
            try await Self.hold(password, on: clipboard, for: .seconds(clearAfter))
        }

        /// Copies `password`, waits `time` or a SIGINT/SIGTERM, then clears the clipboard if it still holds it.
        static func hold(_ password: String, on clipboard: Clipboard, for time: Duration) async throws {
            let stop = AsyncStream<Void>.makeStream()
            let sources = await ServingProcess.onStopSignal { stop.continuation.finish() }
            defer { sources.cancel() }
            try clipboard.copy(password)
            printLine(
                "Copied the password to the clipboard (\(clipboard.tool.name)); clearing it in \(time.inSeconds.formatted()) s, or now with Ctrl-C."
            )
            fflush(nil)  // said at once: a script waits for this line
            let interrupted = await withTaskGroup(of: Bool.self) { group in
                group.addTask {
                    try? await Task.sleep(for: time)
                    return false
                }
                group.addTask {
                    for await _ in stop.stream {}
                    return !Task.isCancelled
                }
                let first = await group.next() ?? false
                stop.continuation.finish()
                group.cancelAll()
                return first
            }
            if try clipboard.clear(ifHolding: password) {
                printLine("Cleared the clipboard.")
            } else {
                printLine("The clipboard holds something else now; left it as it is.")
            }
            // Ctrl-C ends as it ends every command (status 130); SIGTERM is a clean stop.
            if interrupted { ServingProcess.endIfInterrupted() }
        }
    }

}
