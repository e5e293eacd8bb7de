import Basics
import CTAP2
import Foundation
import Synchronization
import PasskeyFilesIO
import PasskeyStoreIO
import StoreAgent
import StoreAgentIO

/// Opening the passkey store: where it is, where its passphrase comes from, creating it when allowed, and the lock an
/// authenticator takes. Every service that touches passkeys opens the store here.
///
/// The passphrase comes from `PASSKEY_PASSPHRASE` when set (tests and scripts); else, when the store agent holds this
/// store's key (`passkey unlock`), the store opens through it without asking; else the person is asked through
/// `interface`, a wrong passphrase again up to three tries in all (``PassphraseTries``). A passphrase typed to open
/// the store may count as the verification of the ceremony that follows (``OpeningVerification``). A new
/// store's passphrase is asked twice. Nothing is created or replaced when an answer is missing or the two answers
/// differ.
public struct StoreAccess: Sendable {
    /// The store and the files beside it.
    public let files: PasskeyFiles
    public let interface: any ProviderUserInterface
    /// Where `PASSKEY_PASSPHRASE` is read from.
    public let environment: [String: String]
    /// Whether the interface can ask at all (a terminal is attached); without one, a missing passphrase fails at once
    /// with a hint instead of a prompt nobody sees.
    public let canAsk: Bool
    /// Whether a new store may take a passphrase that breaks ``NewPassphraseRule`` (`init --allow-weak-passphrase`,
    /// or `PASSKEY_ALLOW_WEAK_PASSPHRASE=1`: for tests).
    public let allowsWeakPassphrase: Bool

    public init(
        files: PasskeyFiles, interface: any ProviderUserInterface, environment: [String: String], canAsk: Bool,
        allowsWeakPassphrase: Bool = false
    ) {
        self.files = files
        self.interface = interface
        self.environment = environment
        self.canAsk = canAsk
        self.allowsWeakPassphrase = allowsWeakPassphrase || environment["PASSKEY_ALLOW_WEAK_PASSPHRASE"] == "1"
    }

    public var url: URL { files.store }

    /// Whether a store exists at `url`.
    public var exists: Bool { FileManager.default.fileExists(atPath: url.path) }

    /// Opens the store, creating it when `create` allows and it does not exist yet.
    public func open(create: Bool) async throws(ProviderError) -> SQLiteCredentialStore {
        let exists = exists
        if !exists && !create { throw Self.noStore(at: url) }
        guard exists else {
            let passphrase = try await passphrase(forNewStore: true)
            do {
                let store = try SQLiteCredentialStore.create(at: url, passphrase: passphrase)
                interface.report(.storeCreated(path: url.path))
                return store
            } catch {
                throw ProviderError(error.message)
            }
        }
        if environment["PASSKEY_PASSPHRASE"] == nil, let store = try openThroughAgent() { return tidied(store) }
        var tries = PassphraseTries()
        while true {
            let passphrase = try await passphrase(forNewStore: false)
            do {
                let store = try SQLiteCredentialStore.open(at: url, passphrase: passphrase)
                if environment["PASSKEY_PASSPHRASE"] == nil { OpeningVerification.grant(to: store) }
                return tidied(store)
            } catch {
                guard error.code == .wrongPassphrase, environment["PASSKEY_PASSPHRASE"] == nil else {
                    throw ProviderError(error.message)
                }
                let left = tries.wrong()
                interface.report(.wrongPassphrase(attemptsLeft: left))
                if left == 0 { throw ProviderError(error.message) }
            }
        }
    }

    /// Whether the store exists and opens with nobody asked: `PASSKEY_PASSPHRASE` is set, or the agent holds its key.
    public var opensWithoutAsking: Bool {
        guard exists else { return false }
        if environment["PASSKEY_PASSPHRASE"] != nil { return true }
        guard let agent, case .held? = try? agent.send(.status(store: agentPath)) else { return false }
        return true
    }

    /// `store`, after the passkeys hidden for longer than their grace period are deleted (one read when there are
    /// none). Best effort: a store that cannot be written now still opens, and they go the next time.
    private func tidied(_ store: SQLiteCredentialStore) -> SQLiteCredentialStore {
        if let deleted = try? store.deleteExpiredHidden(now: Date()), !deleted.isEmpty {
            interface.report(
                .hiddenPasskeysDeleted(
                    count: deleted.count, graceDays: Int(SQLiteCredentialStore.hiddenGracePeriod / 86_400)))
        }
        return store
    }

    /// The agent that may hold this store's key: the one at `$XDG_RUNTIME_DIR/passkey/agent.sock`; nil without
    /// `XDG_RUNTIME_DIR`.
    public var agent: AgentClient? { AgentClient(environment: environment) }

    /// The store's path as the agent knows it: every symbolic link followed, as for the store's lock.
    public var agentPath: String { StoreLock.resolved(url).path }

    /// How long ago the person unlocked this store in the agent (`passkey unlock`); nil when no agent holds its key.
    /// Consent without a terminal counts an Allow as user verification only shortly after (`AllowVerification`).
    public func agentUnlockAge() -> Duration? {
        guard let agent, case .held(_, let sinceUnlock)? = try? agent.send(.status(store: agentPath)) else {
            return nil
        }
        return sinceUnlock
    }

    /// The store opened through the agent when it holds the key; nil when no agent runs or it does not hold it.
    private func openThroughAgent() throws(ProviderError) -> SQLiteCredentialStore? {
        guard let agent, case .held? = try? agent.send(.status(store: agentPath)) else { return nil }
        do {
            return try SQLiteCredentialStore.open(at: url, keyring: AgentKeyring(client: agent, store: agentPath))
        } catch {
            throw ProviderError(error.message)
        }
    }

    /// Creates a new store (`passkey init`), asking for its passphrase twice; refuses to replace anything.
    public func create() async throws(ProviderError) -> SQLiteCredentialStore {
        let taken = { FileManager.default.fileExists(atPath: url.path) || Self.isSymbolicLink(url.path) }
        guard !taken() else { throw Self.alreadyExists(at: url) }
        let passphrase = try await passphrase(forNewStore: true)
        // Checked again: the passphrase prompt may have taken minutes. `create` itself never replaces a file.
        guard !taken() else { throw Self.alreadyExists(at: url) }
        do {
            return try SQLiteCredentialStore.create(at: url, passphrase: passphrase)
        } catch {
            throw ProviderError(error.message)
        }
    }

    /// Takes the store's lock, then opens it as `open(create:)` does: for the services that run an authenticator,
    /// which keeps the PIN and UV settings in memory and so must be the store's only one. A second one fails at once,
    /// naming the first one's process ID. Damaged rows are skipped while serving, each reported once.
    public func openForServing(create: Bool) async throws(ProviderError) -> (StoreLock, SQLiteCredentialStore) {
        let lock: StoreLock
        do {
            lock = try StoreLock.acquire(forStore: url)
        } catch {
            throw ProviderError(error.message)
        }
        let store = try await open(create: create)
        let interface = interface
        store.onDamagedCredential { damaged in interface.report(.damagedCredentialSkipped("\(damaged)")) }
        return (lock, store)
    }

    /// Runs `body` with the store taken and opened (`openForServing`), then closes it and lets its lock go.
    public func withServingStore<Result>(
        create: Bool, _ body: (SQLiteCredentialStore) async throws -> Result
    ) async throws -> Result {
        let (lock, store) = try await openForServing(create: create)
        defer {
            store.close()
            withExtendedLifetime(lock) {}
        }
        return try await body(store)
    }

    /// The failure of a service that needs an existing store.
    public static func noStore(at url: URL) -> ProviderError {
        ProviderError(
            "no passkey store at \(url.path)",
            hint: "Create one with `passkey init`, or choose another with --store or PASSKEY_STORE.")
    }

    static func alreadyExists(at url: URL) -> ProviderError {
        ProviderError(
            "a passkey store already exists at \(url.path); not replacing it",
            hint: "Choose another path with --store or PASSKEY_STORE, or delete the old store first.")
    }

    private static func isSymbolicLink(_ path: String) -> Bool {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: path)) != nil
    }

    private func passphrase(forNewStore isNew: Bool) async throws(ProviderError) -> String {
        if let fromEnvironment = environment["PASSKEY_PASSPHRASE"] {
            guard !fromEnvironment.isEmpty else { throw ProviderError("PASSKEY_PASSPHRASE is set but empty") }
            if isNew { try checkNew(fromEnvironment) }
            return fromEnvironment
        }
        guard canAsk else {
            throw ProviderError(
                "the passkey store needs a passphrase", hint: "Set PASSKEY_PASSPHRASE, or run passkey in a terminal.")
        }
        let first =
            isNew
            ? SecretRequest.newStorePassphrase(path: url.path, confirming: false) : .storePassphrase(path: url.path)
        guard case .given(let passphrase) = await interface.secret(first), !passphrase.isEmpty else {
            throw ProviderError("no passphrase given")
        }
        guard isNew else { return passphrase }
        try checkNew(passphrase)
        guard case .given(let again) = await interface.secret(.newStorePassphrase(path: url.path, confirming: true)),
            constantTimeEqual(Array(again.utf8), Array(passphrase.utf8))
        else {
            throw ProviderError("the passphrases do not match; nothing was created")
        }
        return passphrase
    }

    /// Refuses a new store's passphrase that breaks ``NewPassphraseRule``, unless ``allowsWeakPassphrase``.
    private func checkNew(_ passphrase: String) throws(ProviderError) {
        guard !allowsWeakPassphrase, let problem = NewPassphraseRule.problem(passphrase) else { return }
        throw ProviderError(
            problem + "; nothing was created",
            hint: "Use a few words, e.g. four unrelated ones; the store's key is only as strong as its passphrase.")
    }
}

/// The store passphrases typed in this process to open a store: the ceremony that follows on that store takes it as
/// its user verification instead of asking again (issue 24: `scan` asked twice, once to open, once to verify). Each
/// is taken once, and only within ``lifetime`` of the typing, so a ceremony long after the opening asks afresh; a
/// passphrase from `PASSKEY_PASSPHRASE` or a store opened through the agent grants nothing, so the ceremony asks,
/// once.
public enum OpeningVerification {
    /// How long after the passphrase was typed it still counts: two minutes, the time a ceremony's question waits.
    public static let lifetime = Duration.seconds(120)

    /// A grant, with the store it was made for held weakly: an identifier reused by a later store grants nothing.
    private struct Grant: Sendable {
        weak var store: SQLiteCredentialStore?
        var typed: ContinuousClock.Instant
    }

    private static let granted = Mutex<[ObjectIdentifier: Grant]>([:])

    /// Records that the person typed `store`'s passphrase just now.
    public static func grant(to store: SQLiteCredentialStore, at now: ContinuousClock.Instant = .now) {
        granted.withLock { grants in
            grants = grants.filter { $0.value.store != nil }
            grants[ObjectIdentifier(store)] = Grant(store: store, typed: now)
        }
    }

    /// Whether a typed passphrase is waiting to count for `store`; it counts once, and not after ``lifetime``.
    public static func take(
        for store: SQLiteCredentialStore, at now: ContinuousClock.Instant = .now
    ) -> Bool {
        guard let grant = granted.withLock({ $0.removeValue(forKey: ObjectIdentifier(store)) }),
            grant.store === store
        else { return false }
        return now - grant.typed <= lifetime
    }
}

/// What a new store's passphrase must be: at least ``minimumLength`` characters, and not one or two characters
/// repeated (issue 24: `init` took `abc`). The store's key is derived from it with scrypt, so an offline guesser of
/// a copied store pays for each guess, but a short passphrase still falls to a dictionary.
public enum NewPassphraseRule {
    public static let minimumLength = 12
    public static let minimumDistinctCharacters = 4

    /// Why `passphrase` may not protect a new store, for a person; nil when it may.
    public static func problem(_ passphrase: String) -> String? {
        let count = passphrase.count
        if count < minimumLength {
            return "a new store's passphrase needs at least \(minimumLength) characters (this one has \(count))"
        }
        if Set(passphrase).count < minimumDistinctCharacters {
            return "a new store's passphrase needs at least \(minimumDistinctCharacters) different characters"
        }
        return nil
    }
}
