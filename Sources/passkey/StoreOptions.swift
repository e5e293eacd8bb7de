import ArgumentParser
import CTAP2
import Foundation
import PasskeyStoreIO

/// `--store PATH` and the passphrase that unlocks it, shared by every command that touches passkeys.
struct StoreOptions: ParsableArguments {
    @Option(
        name: .customLong("store"),
        help: ArgumentHelp(
            "The passkey store file (default: $PASSKEY_STORE, else $XDG_DATA_HOME/passkey/passkeys.sqlite).",
            valueName: "path"))
    var path: String?

    var url: URL {
        if let path { return URL(fileURLWithPath: path) }
        return SQLiteCredentialStore.defaultURL(environment: ProcessInfo.processInfo.environment)
    }

    /// Opens the store, creating it when `create` allows and it does not exist yet. The
    /// passphrase comes from $PASSKEY_PASSPHRASE or a prompt without echo.
    func open(create: Bool) async throws -> SQLiteCredentialStore {
        let url = url
        let exists = FileManager.default.fileExists(atPath: url.path)
        if !exists && !create {
            throw Self.noStore(at: url)
        }
        let passphrase = try await Self.passphrase(forNewStore: !exists, at: url)
        if exists {
            return try SQLiteCredentialStore.open(at: url, passphrase: passphrase)
        }
        let store = try SQLiteCredentialStore.create(at: url, passphrase: passphrase)
        Terminal.shared.write("passkey: created a new encrypted passkey store at \(url.path)\n")
        return store
    }

    /// Creates a new store for `passkey init`, asking for its passphrase twice; refuses to replace anything.
    func create() async throws -> SQLiteCredentialStore {
        let url = url
        let exists = { FileManager.default.fileExists(atPath: url.path) || Self.isSymbolicLink(url.path) }
        guard !exists() else { throw Self.alreadyExists(at: url) }
        let passphrase = try await Self.passphrase(forNewStore: true, at: url)
        // Checked again: the passphrase prompt may have taken minutes. `create` itself never replaces a file.
        guard !exists() else { throw Self.alreadyExists(at: url) }
        return try SQLiteCredentialStore.create(at: url, passphrase: passphrase)
    }

    /// The failure of a command that needs an existing store.
    static func noStore(at url: URL) -> CommandFailure {
        CommandFailure(
            "no passkey store at \(url.path)",
            hint: "Create one with `passkey init`, or choose another with --store or PASSKEY_STORE.")
    }

    private static func alreadyExists(at url: URL) -> CommandFailure {
        CommandFailure(
            "a passkey store already exists at \(url.path); not replacing it",
            hint: "Choose another path with --store or PASSKEY_STORE, or delete the old store first.")
    }

    private static func isSymbolicLink(_ path: String) -> Bool {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: path)) != nil
    }

    /// Takes the store's `StoreLock`, then opens it as `open(create:)` does: for the commands that run an
    /// authenticator, which keeps the PIN and UV settings in memory and so must be the store's only one. A second
    /// one fails at once, naming the first one's process ID.
    func openForServing(create: Bool) async throws -> (StoreLock, SQLiteCredentialStore) {
        let lock = try StoreLock.acquire(forStore: url)
        let store = try await open(create: create)
        // Damaged rows (see `passkey list`) are skipped while serving; each is reported once.
        store.onDamagedCredential { damaged in
            Terminal.shared.write("passkey: store error: \(damaged); skipped\n")
        }
        return (lock, store)
    }

    private static func passphrase(forNewStore isNew: Bool, at url: URL) async throws -> String {
        if let fromEnvironment = ProcessInfo.processInfo.environment["PASSKEY_PASSPHRASE"] {
            guard !fromEnvironment.isEmpty else { throw CommandFailure("PASSKEY_PASSPHRASE is set but empty") }
            return fromEnvironment
        }
        let terminal = Terminal.shared
        guard terminal.isInteractive else {
            throw CommandFailure(
                "the passkey store needs a passphrase", hint: "Set PASSKEY_PASSPHRASE, or run passkey in a terminal.")
        }
        let question = isNew ? "Choose a passphrase for the new store at \(url.path): " : "Passphrase for \(url.path): "
        guard case .line(let first) = await terminal.readSecret(prompt: question, timeout: .seconds(300)),
            !first.isEmpty
        else {
            throw CommandFailure("no passphrase given")
        }
        guard isNew else { return first }
        guard
            case .line(let second) = await terminal.readSecret(
                prompt: "Repeat the passphrase: ", timeout: .seconds(300)),
            second == first
        else {
            throw CommandFailure("the passphrases do not match; nothing was created")
        }
        return first
    }
}

/// `--yes`: approve every request without asking (tests and CI only). Also $PASSKEY_ASSUME_YES=1.
struct ApprovalOptions: ParsableArguments {
    @Flag(name: .long, help: "Approve every request without asking. For tests and CI only; the output says so.")
    var yes = false

    var unattended: Bool { yes || ProcessInfo.processInfo.environment["PASSKEY_ASSUME_YES"] == "1" }

    /// The user interaction to use: the terminal prompt, or the announced unattended approver.
    func makeUserInteraction(store: SQLiteCredentialStore) -> any UserInteraction {
        guard unattended else {
            return TerminalUserInteraction(verifyPassphrase: { store.verifyPassphrase($0) })
        }
        Unattended.announce(reason: yes ? "--yes" : "PASSKEY_ASSUME_YES=1")
        return Unattended.LoggingApproval()
    }
}
