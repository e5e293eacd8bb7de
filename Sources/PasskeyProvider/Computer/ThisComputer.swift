import CTAP2
import Foundation
import PasskeyStoreIO
import WebAuthnClient

/// This computer's store as the browser sees it: its passkeys as the platform authenticator and its passwords beside
/// them. While the store is locked both are listed from the identity index, without the passphrase; the store is
/// unlocked only when the ceremony uses one of them. Once it is unlocked (a chooser shown after `--link` or
/// `--phone` unlocked it, or after an earlier use in the same command), they are listed from the sealed rows
/// instead (``SQLiteCredentialStore/sealedIndex()``): the index file is not authenticated, and whoever can write it
/// must not choose the names an unlocked store's chooser shows.
public final class ThisComputer: Sendable {
    /// The store, unlocked at most once per command and kept (with its lock, once serving) until the command ends.
    public let store: UnlockedStore
    public let approval: ApprovalMode

    public var access: StoreAccess { store.access }

    public convenience init(access: StoreAccess, approval: ApprovalMode) {
        self.init(store: UnlockedStore(access: access), approval: approval)
    }

    public init(store: UnlockedStore, approval: ApprovalMode) {
        self.store = store
        self.approval = approval
    }

    /// The store's passkeys as the platform authenticator: listed (``passkeys(relyingPartyID:)``) without the
    /// passphrase while the store is locked; unlocked (the passphrase asked for, or `PASSKEY_PASSPHRASE`) and locked
    /// for serving only when the ceremony uses them. `reportError` hears the store's own failures during the
    /// ceremony.
    public func authenticator(reportError: @escaping @Sendable (any Error) -> Void) -> InProcessAuthenticator {
        InProcessAuthenticator(
            kind: .platform, transports: [.internal],
            listing: { [self] relyingPartyID in passkeys(relyingPartyID: relyingPartyID) },
            opening: { [self] () async throws(AuthenticatorTransportError) -> Authenticator in
                let store: SQLiteCredentialStore
                do {
                    store = try await self.store.openForServing()
                } catch {
                    throw AuthenticatorTransportError("this computer's passkey store: \(error)")
                }
                return Authenticator(
                    configuration: .platform,
                    environment: AuthenticatorEnvironment(
                        store: store,
                        userInteraction: approval.consent(
                            interface: access.interface,
                            verifiedAtOpening: { OpeningVerification.take(for: store) },
                            verifyPassphrase: { store.verifyPassphrase($0) }),
                        reportError: reportError))
            })
    }

    /// The credentials for `relyingPartyID`, in the index's order (rank, then most recently used): from the sealed
    /// rows once the store is unlocked, else from the identity index (``passkeys(storeURL:relyingPartyID:)``).
    public func passkeys(relyingPartyID: String) -> [CredentialMetadata]? {
        guard let unlocked = store.current else {
            return Self.passkeys(storeURL: access.url, relyingPartyID: relyingPartyID)
        }
        guard let sealed = try? unlocked.sealedIndex() else { return nil }
        return Self.metadata(sealed, relyingPartyID: relyingPartyID)
    }

    /// The credentials the identity index lists for `relyingPartyID`, in its order (rank, then most recently used);
    /// nil when the index is missing or damaged, so that the store is offered as "this computer" and unlocked, which
    /// rebuilds the index.
    public static func passkeys(storeURL: URL, relyingPartyID: String) -> [CredentialMetadata]? {
        guard let index = try? CredentialIdentityIndex.read(forStore: storeURL) else { return nil }
        return metadata(index, relyingPartyID: relyingPartyID)
    }

    static func metadata(_ index: CredentialIdentityIndex, relyingPartyID: String) -> [CredentialMetadata] {
        // A passkey a relying party's signal hid is not offered (`passkey unhide` shows it again).
        index.identities(forRelyingParty: relyingPartyID).filter { !$0.isHidden }.map { identity in
            CredentialMetadata(
                credentialID: identity.credentialID, userHandle: identity.userHandle, userName: identity.userName,
                userDisplayName: identity.userDisplayName, isDiscoverable: identity.isDiscoverable,
                created: identity.creationDate, lastUsed: identity.lastUsedDate)
        }
    }

    /// The passwords saved for `relyingPartyID`, offered by `client get --password`: from the index, without the
    /// passphrase, while the store is locked; from the sealed rows once it is unlocked. Logins without a user name
    /// are not offered.
    public func passwords(relyingPartyID: String) -> [PasswordLogin] {
        let read = { () -> CredentialIdentityIndex? in
            guard let unlocked = self.store.current else {
                return try? CredentialIdentityIndex.read(forStore: self.access.url)
            }
            return try? unlocked.sealedIndex()
        }
        guard let index = read() else { return [] }
        return index.passwords(forRelyingParty: relyingPartyID).compactMap { identity in
            guard let userName = identity.userName else { return nil }
            return PasswordLogin(id: identity.credentialID, userName: userName, service: identity.serviceIdentifier)
        }
    }

    /// The picked login's password, read by unlocking the store; the login is ranked first for next time, and its
    /// fill recorded (``SavedLogin/filledDate``).
    public func password(for login: PasswordLogin) async throws(ProviderError) -> PasswordCredential {
        let store = try await self.store.open()
        do {
            guard let service = PasswordService(login.service),
                let credential = try store.passwords(service: service).first(where: { $0.login.id == login.id })
            else {
                throw ProviderError("the saved password for \"\(login.userName)\" is gone or damaged")
            }
            // Given to the page now: what lets the account's passkey be made by a conditional create just after.
            try store.recordPasswordUse(credential.login, filledAt: Date())
            return credential
        } catch let error as ProviderError {
            throw error
        } catch {
            throw ProviderError("the saved password for \"\(login.userName)\" could not be read: \(error)")
        }
    }
}
