import CTAP2
import Foundation
import PasskeyStoreIO
import Synchronization

/// One command's store, unlocked at most once: what the browser commands share between this computer's passkeys
/// (``ThisComputer``) and the sealed linked phones (``ComputerLinks``), so that the passphrase is asked once and
/// every chooser shown after unlocking can take its names from the sealed rows.
public final class UnlockedStore: Sendable {
    public let access: StoreAccess
    private let state = Mutex<(store: SQLiteCredentialStore?, lock: StoreLock?)>((nil, nil))

    public init(access: StoreAccess) { self.access = access }

    /// A store already unlocked (and locked for serving) by its caller, as `passkey serve` holds it: ``open()`` gives
    /// it without asking again; the caller closes it and releases its lock.
    public init(access: StoreAccess, unlocked store: SQLiteCredentialStore) {
        self.access = access
        state.withLock { $0.store = store }
    }

    /// The store once it was unlocked; nil before.
    public var current: SQLiteCredentialStore? { state.withLock { $0.store } }

    /// The store, unlocked now (the passphrase asked for, or `PASSKEY_PASSPHRASE`) unless it already was.
    public func open() async throws(ProviderError) -> SQLiteCredentialStore {
        if let store = current { return store }
        let store = try await access.open(create: false)
        return keep(store)
    }

    /// The store, unlocked unless that needs someone to type its passphrase (``StoreAccess/opensWithoutAsking``);
    /// nil then, or when it cannot be opened.
    public func openWithoutAsking() async -> SQLiteCredentialStore? {
        if let store = current { return store }
        guard access.opensWithoutAsking else { return nil }
        return try? await open()
    }

    /// The store, locked for serving (``StoreAccess/openForServing(create:)``): the lock is taken, then the store
    /// unlocked unless it already was. Both are kept until this value goes.
    public func openForServing() async throws(ProviderError) -> SQLiteCredentialStore {
        if state.withLock({ $0.lock == nil }) {
            let lock: StoreLock
            do {
                lock = try StoreLock.acquire(forStore: access.url)
            } catch {
                throw ProviderError(error.message)
            }
            state.withLock { $0.lock = $0.lock ?? lock }
        }
        let store = try await open()
        let interface = access.interface
        store.onDamagedCredential { damaged in interface.report(.damagedCredentialSkipped("\(damaged)")) }
        return store
    }

    /// Keeps `store` unless another one was kept meanwhile, which is returned instead.
    private func keep(_ store: SQLiteCredentialStore) -> SQLiteCredentialStore {
        let kept = state.withLock { state in
            if let earlier = state.store { return earlier }
            state.store = store
            return store
        }
        if kept !== store { store.close() }
        return kept
    }
}
