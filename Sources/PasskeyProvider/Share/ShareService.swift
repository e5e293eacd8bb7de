import CTAP2
import CredentialExchange
import Foundation
import NearbyShare
import PasskeyStoreIO

/// Nearby sharing (`passkey share`, `passkey receive`; Docs/Exchange.md): which passkey goes, what the person is
/// asked before it leaves, and what they are asked before a passkey that arrived is added. The radio, the relay and
/// the sealing are `NearbyShareDriver`'s; the commands wire them to these decisions.
public struct ShareService: Sendable {
    /// The unlocked store passkeys go from and arrive in.
    public let store: SQLiteCredentialStore
    public let interface: any ProviderUserInterface
    public let mode: ApprovalMode
    /// Whether a person can be asked (a terminal); without one only unattended approval shares or adds.
    public let canAsk: Bool
    /// Tries at the store passphrase before a share is refused.
    public var attempts = 3

    public init(
        store: SQLiteCredentialStore, interface: any ProviderUserInterface, mode: ApprovalMode, canAsk: Bool
    ) {
        self.store = store
        self.interface = interface
        self.mode = mode
        self.canAsk = canAsk
    }

    // MARK: Sending

    /// The one passkey whose credential ID is among `candidates` (the text read as base64url and as hex); `text` is
    /// the ID as the person gave it, for messages.
    public func passkey(candidates: [[UInt8]], text: String) throws(ProviderError) -> StoredCredential {
        try CredentialLookup.one(candidates: candidates, text: text, notFoundHint: "`passkey list` shows the IDs.") {
            id throws(CredentialStoreError) in try store.credential(id: id)
        }
    }

    /// Before anything leaves: the question naming what goes, then the store passphrase as user verification, or
    /// the announced unattended approval. Throws when the person says no or cannot be verified.
    public func confirmSharing(_ credential: StoredCredential) async throws(ProviderError) {
        let question = ProviderQuestion.sharePasskey(
            relyingPartyID: credential.relyingPartyID, user: credential.userName ?? "no name")
        switch try await ask(question, needing: "sharing a passkey") {
        case .unattended: return
        case .yes: break
        case .no: throw ProviderError("nothing was shared", exitStatus: ExitStatus.declined)
        }
        let consent = ProviderConsent(interface: interface, attempts: attempts) { store.verifyPassphrase($0) }
        guard case .approved = await consent.verify(selectedAccount: nil) else {
            throw ProviderError("user verification failed; nothing was shared")
        }
    }

    // MARK: Receiving

    /// A passkey that arrived: shown (never its key), then added in one transaction after a yes. A passkey the store
    /// already holds is not asked about.
    public func receive(_ passkey: ImportedPasskey) async throws(ProviderError) -> ShareOutcome {
        let credential = passkey.credential
        interface.report(
            .share(
                .offered(
                    relyingPartyID: credential.relyingPartyID, userName: credential.userName,
                    displayName: credential.userDisplayName, created: credential.creationDate, notes: passkey.notes)))
        do {
            if try store.entry(id: credential.id) != nil { return .alreadyPresent }
        } catch {
            throw ProviderError(error.message)
        }
        let question = ProviderQuestion.addSharedPasskey(store: store.url.path)
        if try await ask(question, needing: "adding a passkey") == .no { return .declined }
        do {
            return try store.importCredentials([credential]).added.count == 1 ? .added : .alreadyPresent
        } catch {
            throw ProviderError(error.message)
        }
    }

    /// The question, answered by the announced unattended approver, or by the person; with nobody to ask it is
    /// refused: "`action` needs your approval".
    private func ask(_ question: ProviderQuestion, needing action: String) async throws(ProviderError)
        -> ApprovalAnswer
    {
        if let reason = mode.unattendedReason { interface.report(.unattendedApprovalOn(reason: reason)) }
        guard let answer = await mode.answer(question, interface: interface, canAsk: canAsk) else {
            throw ProviderError("\(action) needs your approval", hint: "Run it in a terminal.")
        }
        return answer
    }
}

/// What the share role reports.
public enum ShareEvent: Hashable, Sendable {
    /// A person nearby offers this passkey (what it is for; never its key).
    case offered(relyingPartyID: String, userName: String?, displayName: String?, created: Date, notes: [String])
}

/// A credential ID as a person types it, read as base64url and as hex: it must name exactly one passkey.
enum CredentialLookup {
    static func one<Found>(
        candidates: [[UInt8]], text: String, notFoundHint: String?,
        find: ([UInt8]) throws(CredentialStoreError) -> Found?
    ) throws(ProviderError) -> Found {
        var found: [Found] = []
        do {
            for id in candidates {
                if let match = try find(id) { found.append(match) }
            }
        } catch {
            throw ProviderError(error.message)
        }
        guard let first = found.first else {
            throw ProviderError("no passkey with credential ID \(text)", hint: notFoundHint)
        }
        guard found.count == 1 else {
            throw ProviderError(
                "'\(text)' names two passkeys, read as base64url and as hex",
                hint: "Prefix it with b64: or hex: to say which.")
        }
        return first
    }
}
