import CTAP2
import WebAuthnClientDriver
import Foundation
import Hybrid
import PasskeyFilesIO
import PasskeyStoreIO

/// The computer's linked phones (`PasskeyFiles.computerLinks`, sealed under the store key): the phones it reaches
/// without a QR code, and the policy of when one is kept and when it goes.
///
/// Everything about a link (its name and relay as much as its secret and the contact ID that wakes the phone) is in
/// the sealed file, so every use unlocks the store first (``unlock()``): `--link`, `--phone NAME` and
/// `passkey client links` need a passkey store and its passphrase. Without a store they fail at once, saying to
/// create one with `passkey init`. The first unlock also moves the links an earlier version kept in clear
/// (`links.json`) into the sealed file, then removes the clear one.
///
/// A phone is remembered only once it sent linking information (after a QR session that offered linking), and
/// forgotten when its relay says the link is gone (HTTP 410, or WebSocket close code 4410): the phone revoked it,
/// and asking again would only fail again.
public struct ComputerLinks: Sendable {
    /// The store that seals the links, shared with this computer's passkeys.
    public let store: UnlockedStore
    public let interface: any ProviderUserInterface
    /// The clock for when a link was made and last used.
    public let now: @Sendable () -> Date

    public init(
        store: UnlockedStore, interface: any ProviderUserInterface, now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.store = store
        self.interface = interface
        self.now = now
    }

    /// The sealed file.
    public var url: URL { store.access.files.computerLinks }

    /// Unlocks the store (unless it already is) and moves the clear `links.json` of earlier versions into the
    /// sealed file. Without a store: an error that says to create one.
    public func unlock() async throws(ProviderError) {
        let access = store.access
        guard access.exists else {
            throw ProviderError(
                "linked phones are sealed in the passkey store, and there is none at \(access.url.path)",
                hint: "Create one with `passkey init`, or choose another with --store or PASSKEY_STORE.")
        }
        let unlocked = try await store.open()
        try migrate(unlocked)
    }

    /// The clear links file into the sealed one: the sealed file is written (atomically) before the clear one goes,
    /// and merging again is harmless, so a crash in between loses no link.
    private func migrate(_ unlocked: SQLiteCredentialStore) throws(ProviderError) {
        let clearURL = store.access.files.clearComputerLinks
        let clear = LinkedPhoneBook(storage: LinkedPhoneBook.clearFile(clearURL))
        do throws(LinkedPhoneBookError) {
            guard let bytes = try clear.storage.read() else { return }
            let links = try LinkedPhoneBook.decode(bytes, path: clearURL.path)
            let added = try Self.book(unlocked).merge(links)
            do {
                try OwnerOnlyFile.remove(clearURL)
            } catch {
                throw LinkedPhoneBookError("cannot remove \(clearURL.path): \(error.reason)")
            }
            interface.report(.computer(.linksSealed(count: added, from: clearURL.path, to: url.path)))
        } catch {
            throw ProviderError(
                error.description,
                hint: "Move \(clearURL.path) away to use the links sealed in the store without it.")
        }
    }

    /// The book sealed under `store`'s key.
    static func book(_ store: SQLiteCredentialStore) -> LinkedPhoneBook {
        LinkedPhoneBook(
            storage: LinkedPhoneBook.Storage(
                path: PasskeyFiles(store: store.url).computerLinks.path,
                read: { () throws(LinkedPhoneBookError) in
                    do throws(CredentialStoreError) {
                        return try ComputerLinkFile.load(for: store)
                    } catch {
                        throw LinkedPhoneBookError(error.message)
                    }
                },
                write: { (bytes) throws(LinkedPhoneBookError) in
                    do throws(CredentialStoreError) {
                        try ComputerLinkFile.save(bytes, for: store)
                    } catch {
                        throw LinkedPhoneBookError(error.message)
                    }
                }))
    }

    /// The book, once the store is unlocked.
    private func book() throws(LinkedPhoneBookError) -> LinkedPhoneBook {
        guard let unlocked = store.current else {
            throw LinkedPhoneBookError("the passkey store is locked, so the linked phones cannot be read")
        }
        return Self.book(unlocked)
    }

    /// Every linked phone, in the order they were linked (unlocking the store).
    public func phones() async throws(ProviderError) -> [LinkedPhone] {
        try await unlock()
        do {
            return try book().load()
        } catch {
            throw ProviderError(error.description)
        }
    }

    /// The linked phone called `name`, for `--phone NAME`; the error says how to link one or which exist.
    public func phone(named name: String) async throws(ProviderError) -> LinkedPhone {
        let phones = try await phones()
        guard let phone = phones.first(where: { $0.name == name }) else {
            throw ProviderError(
                "no linked phone called \(name)",
                hint: phones.isEmpty
                    ? "Link one: a QR session with --link, answered by `passkey scan --link`."
                    : "Linked phones: " + phones.map(\.name).joined(separator: ", "))
        }
        return phone
    }

    /// The linked phone a security key with a phone behind it tries before showing a QR code: the one called `name`
    /// when given (`serve --phone-name`), else the most recently used (or, never used, the most recently linked); nil
    /// when there is none to try.
    public static func bridgePhone(among phones: [LinkedPhone], named name: String?) -> LinkedPhone? {
        if let name { return phones.first { $0.name == name } }
        return phones.max { ($0.lastUsed ?? $0.created) < ($1.lastUsed ?? $1.created) }
    }

    /// The linked phone a security key with a phone behind it tries (``bridgePhone(among:named:)``); nil when the
    /// links cannot be read or none fits.
    public func bridgePhone(named name: String?) async -> LinkedPhone? {
        guard let phones = try? await phones() else { return nil }
        return Self.bridgePhone(among: phones, named: name)
    }

    /// Forgets the phone called `name` (`passkey client links remove`).
    public func remove(named name: String) async throws(ProviderError) {
        try await unlock()
        let forgotten: Bool
        do {
            forgotten = try book().forget(name)
        } catch {
            throw ProviderError(error.description)
        }
        guard forgotten else { throw ProviderError("no linked phone called \(name)") }
    }

    /// Keeps what a phone sent at the end of a QR session (the store was unlocked when linking was offered). A link
    /// that cannot be saved is reported, not thrown: the ceremony itself succeeded.
    public func remember(_ linking: LinkingInfo, relay: TunnelServerBaseURL) {
        do {
            let name = try book().remember(linking, relay: relay, now: now())
            interface.report(.computer(.phoneRemembered(name: name, file: url.path)))
        } catch {
            interface.report(.computer(.linkNotSaved(reason: error.description)))
        }
    }

    /// The relay said the phone revoked the link called `name`: forget it, and say so.
    public func gone(_ name: String) {
        _ = try? book().forget(name)
        interface.report(.computer(.linkRevoked(name: name, file: url.path)))
    }

    /// The link called `name` reached its phone: record the use (best effort; the session goes on).
    public func used(_ name: String) {
        try? book().used(name, now: now())
    }
}
