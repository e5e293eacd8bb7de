import CTAP2
import Foundation
import PasskeyStoreIO
import WebAuthnClient

/// A relying party's signals (WebAuthn L3 §5.1.10) applied to this computer's store, and the store's side of an
/// automatic passkey upgrade (conditional create). The decisions are ``CredentialSignal/actions(on:)`` and
/// ``ConditionalCreate/allows(rpID:userName:fills:passkeys:now:)``; this is where they meet the rows.
extension PasskeyCatalog {
    /// Applies `signal` to the store: a passkey the relying party does not know is hidden (kept for
    /// ``SQLiteCredentialStore/hiddenGracePeriod``, then deleted), one it accepts again is shown, an account is
    /// renamed. The store is always unlocked and the relying party's rows always read, so that a signal about
    /// credentials this store does not hold costs the same and ends the same (nothing returned to the caller's page
    /// depends on it). Returns what was done, for tests and `--verbose`; a command shows the page's result only.
    @discardableResult
    public func deliver(_ signal: CredentialSignal, now: Date = Date()) async throws(ProviderError) -> [SignalAction] {
        let store = try await access.open(create: false)
        defer { store.close() }
        do {
            let held = try store.credentials(forRelyingParty: signal.relyingPartyID)
            let actions = signal.actions(on: held.map(SignalCredential.init))
            var hide: [[UInt8]] = []
            var show: [[UInt8]] = []
            for action in actions {
                switch action {
                case .hide(let id): hide.append(id)
                case .unhide(let id): show.append(id)
                case .rename(let id, let name, let displayName):
                    _ = try store.updateUser(
                        credentialID: id, userName: AccountNames.truncated(name),
                        userDisplayName: AccountNames.truncated(displayName))
                }
            }
            if !hide.isEmpty { try store.setHidden(now, credentialIDs: hide) }
            if !show.isEmpty { try store.setHidden(nil, credentialIDs: show) }
            return actions
        } catch {
            throw ProviderError(error.message)
        }
    }

    /// Shows again a passkey a signal hid (`passkey unhide`): the one whose credential ID is one of `candidates`
    /// (`text` as the person gave it). Returns it; one that was not hidden is returned unchanged.
    public func unhide(candidates: [[UInt8]], text: String) async throws(ProviderError) -> StoredCredential {
        try await withPasskey(candidates: candidates, text: text) { store, id, entry in
            guard case .intact(let credential) = entry else {
                throw ProviderError(
                    "the passkey \(text) is damaged, so it cannot be shown again",
                    hint: "Delete it (`passkey delete`) and register again.")
            }
            guard credential.hiddenDate != nil else { return credential }
            return try store.setHidden(nil, credentialIDs: [id]).first ?? credential
        }
    }
}

extension SignalCredential {
    /// A stored passkey as a signal sees it.
    init(_ credential: StoredCredential) {
        self.init(
            credentialID: credential.id, relyingPartyID: credential.relyingPartyID, userHandle: credential.userHandle,
            userName: credential.userName, userDisplayName: credential.userDisplayName,
            isHidden: credential.hiddenDate != nil)
    }
}

extension AccountNames {
    /// `name` cut to at most ``maximumBytes`` bytes of UTF-8 on a character boundary, as makeCredential keeps a
    /// relying party's names (CTAP 2.1 §6.1.2); an empty name is nil.
    public static func truncated(_ name: String) -> String? {
        var kept = ""
        for character in name {
            guard kept.utf8.count + String(character).utf8.count <= maximumBytes else { break }
            kept.append(character)
        }
        return kept.isEmpty ? nil : kept
    }
}

extension ThisComputer {
    /// Whether a conditional create for `userName` at `relyingPartyID` may make a passkey here now, with nobody
    /// asked (``ConditionalCreate``): the store must open without asking for its passphrase (already unlocked, the
    /// agent holds its key, or `PASSKEY_PASSPHRASE`), a saved password of that user for the RP ID must have been
    /// given to a page within ``ConditionalCreate/window``, and no passkey of that user may be here yet.
    public func allowsConditionalCreation(relyingPartyID: String, userName: String, now: Date = Date()) async -> Bool {
        guard let store = await store.openWithoutAsking() else { return false }
        let oldestFill = now.addingTimeInterval(-ConditionalCreate.window)
        guard let logins = try? store.passwordEntries(filledSince: oldestFill),
            let passkeys = try? store.credentials(forRelyingParty: relyingPartyID)
        else { return false }
        let fills = logins.compactMap { entry -> ConditionalCreate.PasswordFill? in
            guard case .intact(let credential) = entry, let filled = credential.login.filledDate,
                let host = credential.login.service.host
            else { return nil }
            return ConditionalCreate.PasswordFill(host: host, userName: credential.login.userName, date: filled)
        }
        return ConditionalCreate.allows(
            rpID: relyingPartyID, userName: userName, fills: fills, passkeys: passkeys.map(SignalCredential.init),
            now: now)
    }
}
