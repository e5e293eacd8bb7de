import Basics
import CTAP2
import Foundation
import PasskeyStoreIO

/// What the store holds, for listing and deleting (`passkey list`, `passkey delete`, `passkey password list`).
///
/// Listing reads the identity index beside the store, which names the passkeys but holds no keys, so no passphrase is
/// needed. A missing or damaged index is rebuilt by unlocking the store only when the passphrase comes without asking
/// (`PASSKEY_PASSPHRASE`: a script expects `list` to work); a person is told how instead of being asked.
public struct PasskeyCatalog: Sendable {
    public let access: StoreAccess

    public init(access: StoreAccess) { self.access = access }

    /// The index, without the passphrase when it can be read.
    public func index() async throws(ProviderError) -> CredentialIdentityIndex {
        let url = access.url
        guard access.exists else { throw StoreAccess.noStore(at: url) }
        do {
            return try CredentialIdentityIndex.read(forStore: url)
        } catch {
            guard access.environment["PASSKEY_PASSPHRASE"] != nil else { throw Self.unusable(error) }
        }
        // Opening the store with its passphrase rebuilds the index.
        try await access.open(create: false).close()
        do {
            return try CredentialIdentityIndex.read(forStore: url)
        } catch {
            throw Self.unusable(error)
        }
    }

    static func unusable(_ error: CredentialIdentityIndexError) -> ProviderError {
        ProviderError(
            "the passkey index \(error.path) is missing or damaged (\(error.reason))",
            hint: "Unlock the store once to rebuild it, for example with `passkey list --verify`.")
    }

    /// The rows themselves, checked with the passphrase, for one relying party or all.
    public func verifiedEntries(relyingParty: String?) async throws(ProviderError) -> [CredentialEntry] {
        let store = try await access.open(create: false)
        defer { store.close() }
        do {
            let entries = try store.entries()
            guard let relyingParty else { return entries }
            return entries.filter { $0.relyingPartyID == relyingParty }
        } catch {
            throw ProviderError(error.message)
        }
    }

    /// Deletes the one passkey whose credential ID is one of `candidates` (the text read as base64url and as hex),
    /// damaged or not: the row alone decides. `text` is the ID as the person gave it, for messages. The person is
    /// shown which passkey it is and asked first (issue 24: `delete` did not confirm); `mode` may answer for them
    /// (`--yes`), and with nobody to ask and no `--yes` nothing is deleted. Returns what was deleted.
    public func delete(
        candidates: [[UInt8]], text: String, mode: ApprovalMode
    ) async throws(ProviderError) -> CredentialEntry {
        let store = try await access.open(create: false)
        defer { store.close() }
        do {
            let (id, entry) = try CredentialLookup.one(candidates: candidates, text: text, notFoundHint: nil) {
                id throws(CredentialStoreError) in try store.entry(id: id).map { (id, $0) }
            }
            let question: ProviderQuestion =
                switch entry {
                case .intact(let credential):
                    .deletePasskey(
                        relyingPartyID: credential.relyingPartyID,
                        account: credential.userName ?? credential.userDisplayName ?? "an account with no name")
                case .damaged(let damaged):
                    .deletePasskey(relyingPartyID: nil, account: damaged.id.base64URLEncodedString)
                }
            switch await mode.answer(question, interface: access.interface, canAsk: access.canAsk) {
            case .unattended, .yes: break
            case .no: throw ProviderError("not deleted; nothing changed", exitStatus: ExitStatus.declined)
            case nil: throw PasswordVault.needsConfirmation
            }
            guard try store.deleteCredential(id: id) else {
                throw ProviderError("no passkey with credential ID \(text)")
            }
            return entry
        } catch let error as ProviderError {
            throw error
        } catch let error as CredentialStoreError {
            throw ProviderError(error.message)
        } catch {
            throw ProviderError("\(error)")
        }
    }
}
