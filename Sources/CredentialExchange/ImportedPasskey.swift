import Basics
import CTAP2
import Crypto
import Foundation
import JSON

/// A passkey read from an import file and checked, ready to add to a store.
public struct ImportedPasskey: Sendable {
    /// The credential as the store keeps it: counter-less as every passkey here, BE and BS set.
    public var credential: StoredCredential
    /// Where it is in the file (`accounts[0].items[2].credentials[0]`, `items[3].login.fido2Credentials[0]`).
    public var location: String
    /// What did not come across and the user should know (a signature counter reset, PRF values not kept).
    public var notes: [String]
    /// The person's own note about it: a CXF `note` in the same item (`passkey note`).
    public var note: String?

    public init(credential: StoredCredential, location: String, notes: [String] = [], note: String? = nil) {
        self.credential = credential
        self.location = location
        self.notes = notes
        self.note = note
    }
}

/// What an import file holds: the passkeys that passed every check, and what was left aside.
public struct ImportContents: Sendable {
    /// The file's kind, for messages: "CXF", "passkey archive", "Bitwarden export", "KeePassXC passkey".
    public var source: String
    public var passkeys: [ImportedPasskey]
    /// Credentials of other types (CXF `basic-auth`, `totp`, …), counted by type and not imported.
    public var skippedTypes: [String: Int]
    /// Whether the file itself was clear text that holds private keys: the user is told to delete it.
    public var wasClearText: Bool

    public init(source: String, passkeys: [ImportedPasskey], skippedTypes: [String: Int] = [:], wasClearText: Bool) {
        self.source = source
        self.passkeys = passkeys
        self.skippedTypes = skippedTypes
        self.wasClearText = wasClearText
    }
}

/// What every reader knows about one passkey before the checks common to all of them.
struct PasskeyDraft {
    var credentialID: [UInt8]
    var rpID: String
    var rpName: String?
    var userHandle: [UInt8]
    var userName: String?
    var userDisplayName: String?
    var privateKey: CredentialPrivateKey
    var creationDate: Date
    var discoverable = true
    var credentialBlob: [UInt8]?
    var hmacCredentials: CXF.HMACCredentials?
    var counter: UInt64 = 0
    var notes: [String] = []

    /// Checks what the store needs and turns the extension state into flags; the reason is for `EntryProblem`.
    func checked(location: String) throws(ExchangeError) -> ImportedPasskey {
        func problem(_ reason: String) -> ExchangeError {
            ExchangeError(.invalidEntries, reason, problems: [EntryProblem(location: location, reason: reason)])
        }
        guard (1...1023).contains(credentialID.count) else {
            throw problem("the credential ID must be 1 to 1023 bytes, not \(credentialID.count)")
        }
        guard !rpID.isEmpty, rpID.utf8.count <= 253,
            rpID.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value != 0x7F && !(0x80...0x9F).contains($0.value) })
        else { throw problem("the relying party ID must be a host name (1 to 253 characters, no spaces or controls)") }
        guard userHandle.count <= 64 else {
            throw problem("the user handle must be at most 64 bytes, not \(userHandle.count)")
        }
        guard !discoverable || !userHandle.isEmpty else { throw problem("a discoverable passkey needs a user handle") }
        guard (credentialBlob?.count ?? 0) <= 32 else { throw problem("the credBlob must be at most 32 bytes") }
        let seconds = creationDate.timeIntervalSince1970
        guard seconds.isFinite, seconds >= 0, seconds < 1e11 else { throw problem("the creation date is out of range") }

        var credential = StoredCredential(
            id: credentialID, relyingPartyID: rpID, relyingPartyName: rpName, userHandle: userHandle,
            userName: userName, userDisplayName: userDisplayName, privateKey: privateKey, isDiscoverable: discoverable,
            backupEligible: true, backupState: true, creationDate: Date(milliseconds: creationDate.milliseconds),
            credentialBlob: credentialBlob)
        var notes = self.notes
        if counter != 0 {
            notes.append(
                "its signature counter was \(counter); passkey always reports 0, which a site that checks counters may refuse"
            )
        }
        if let hmac = hmacCredentials {
            // The store derives CredRandoms from the private key: kept only when the file's are exactly those.
            let derived = credential.hmacSecretCredRandoms
            if hmac.algorithm == CXF.HMACCredentials.hmacSHA256,
                SymmetricKey(data: hmac.credWithUV) == SymmetricKey(data: derived.withUV),
                SymmetricKey(data: hmac.credWithoutUV) == SymmetricKey(data: derived.withoutUV)
            {
                credential.hmacSecret = true
            } else {
                notes.append("its hmac-secret (PRF) values cannot be kept: sites will see PRF as unavailable")
            }
        }
        return ImportedPasskey(credential: credential, location: location, notes: notes)
    }
}

/// Private keys as the exchange formats carry them: a P-256 key (ES256) or an Ed25519 one (EdDSA); the formats name
/// no algorithm, so an Ed25519 key made for the fully specified Ed25519 (-19) comes back as EdDSA (-8), which
/// signs the same.
enum PrivateKeyReading {
    /// PKCS#8 DER (RFC 5958, RFC 8410 for Ed25519), as CXF and Bitwarden carry it.
    static func pkcs8(_ der: [UInt8]) throws(ExchangeError) -> CredentialPrivateKey {
        guard let key = CredentialPrivateKey(pkcs8DER: der) else {
            throw ExchangeError(.invalidKey, "the private key is not a P-256 or Ed25519 key in PKCS#8 DER")
        }
        return key
    }

    /// PEM `PRIVATE KEY` (PKCS#8), as KeePassXC writes it.
    static func pem(_ text: String) throws(ExchangeError) -> CredentialPrivateKey {
        guard text.contains("-----BEGIN PRIVATE KEY-----") else {
            throw ExchangeError(.invalidKey, "the private key is not a PEM \"PRIVATE KEY\" (PKCS#8)")
        }
        guard let key = CredentialPrivateKey(pkcs8PEM: text) else {
            throw ExchangeError(.invalidKey, "the private key is not a P-256 or Ed25519 key in PEM PKCS#8")
        }
        return key
    }
}

extension CXF.Passkey {
    /// The passkey of `credential`, for an export: its key as PKCS#8 DER (P-256 or Ed25519), its hmac-secret CredRandoms when it was
    /// made with hmac-secret, its credBlob.
    public init(_ credential: StoredCredential) {
        let randoms = credential.hmacSecret ? credential.hmacSecretCredRandoms : nil
        let extensions = CXF.FIDO2Extensions(
            hmacCredentials: randoms.map { CXF.HMACCredentials(credWithUV: $0.withUV, credWithoutUV: $0.withoutUV) },
            credBlob: credential.credentialBlob)
        self.init(
            credentialID: credential.id, rpID: credential.relyingPartyID, username: credential.userName ?? "",
            userDisplayName: credential.userDisplayName ?? "", userHandle: credential.userHandle,
            key: credential.privateKey.pkcs8DERRepresentation, fido2Extensions: extensions.isEmpty ? nil : extensions)
    }
}

extension CXF.Header {
    /// A document holding `credentials`, one item each in one account, for an export made at `date`.
    ///
    /// Credentials that are not backup eligible (BE = 0) are single-device credentials by their own flag and are
    /// left out; the caller counts them (`exportable(_:)`).
    /// `notes` are the passkeys' notes by credential ID, each written as a `note` credential in its passkey's item.
    public init(
        exporting credentials: [StoredCredential], notes: [[UInt8]: String] = [:], exporterRpId: String,
        exporterDisplayName: String, at date: Date
    ) {
        let items = credentials.map { credential in
            let created = UInt64(max(0, credential.creationDate.timeIntervalSince1970))
            return CXF.Item(
                id: Array(SHA256.hash(data: credential.id).prefix(16)), creationAt: created, modifiedAt: created,
                title: credential.relyingPartyName ?? credential.relyingPartyID,
                subtitle: credential.userName,
                scope: .object([.init("urls", .array([.string("https://\(credential.relyingPartyID)")]))]),
                credentials: [.passkey(CXF.Passkey(credential))] + (notes[credential.id].map { [.note($0)] } ?? []))
        }
        self.init(
            exporterRpId: exporterRpId, exporterDisplayName: exporterDisplayName,
            timestamp: UInt64(max(0, date.timeIntervalSince1970)),
            accounts: [CXF.Account(id: Array("passkey".utf8), username: "", email: "", items: items)])
    }

    /// The longest note an import carries, in UTF-8 bytes (the store's limit).
    public static let maximumNoteLength = 10_000

    /// Splits credentials into those an export may carry and those it must not (BE = 0).
    public static func exportable(_ credentials: [StoredCredential]) -> (
        exported: [StoredCredential], singleDevice: Int
    ) {
        let exported = credentials.filter(\.backupEligible)
        return (exported, credentials.count - exported.count)
    }

    /// The passkeys of this document, each checked; other credential types are counted. Any bad passkey fails the
    /// whole read with `.invalidEntries`, listing every one, so that nothing partial is imported.
    public func importContents(source: String, wasClearText: Bool) throws(ExchangeError) -> ImportContents {
        var passkeys: [ImportedPasskey] = []
        var problems: [EntryProblem] = []
        for (location, item, passkey) in self.passkeys {
            do {
                var draft = PasskeyDraft(
                    credentialID: passkey.credentialID, rpID: passkey.rpID, userHandle: passkey.userHandle,
                    userName: passkey.username.isEmpty ? nil : passkey.username,
                    userDisplayName: passkey.userDisplayName.isEmpty ? nil : passkey.userDisplayName,
                    privateKey: try PrivateKeyReading.pkcs8(passkey.key),
                    creationDate: Date(timeIntervalSince1970: TimeInterval(item.creationAt ?? timestamp)),
                    credentialBlob: passkey.fido2Extensions?.credBlob,
                    hmacCredentials: passkey.fido2Extensions?.hmacCredentials)
                if passkey.fido2Extensions?.largeBlob != nil {
                    draft.notes.append("its largeBlob is not imported (this store keeps no per-passkey blobs)")
                }
                var imported = try draft.checked(location: location)
                let note = item.credentials.lazy.compactMap { if case .note(let text) = $0 { text } else { nil } }
                    .first
                if let note, note.utf8.count > Self.maximumNoteLength {
                    imported.notes.append(
                        "its note is not kept: it is longer than \(Self.maximumNoteLength) bytes")
                } else {
                    imported.note = note
                }
                passkeys.append(imported)
            } catch {
                problems +=
                    error.problems.isEmpty ? [EntryProblem(location: location, reason: error.message)] : error.problems
            }
        }
        guard problems.isEmpty else { throw ExchangeError.entries(problems) }
        return ImportContents(
            source: source, passkeys: passkeys, skippedTypes: otherCredentialCounts, wasClearText: wasClearText)
    }
}

extension ExchangeError {
    /// The error for bad entries: every one listed.
    static func entries(_ problems: [EntryProblem]) -> ExchangeError {
        ExchangeError(
            .invalidEntries,
            "\(problems.count) \(problems.count == 1 ? "entry" : "entries") cannot be imported; nothing was imported",
            problems: problems)
    }
}

extension Date {
    init(milliseconds: Int64) { self.init(timeIntervalSince1970: TimeInterval(milliseconds) / 1000) }
    var milliseconds: Int64 { Int64((timeIntervalSince1970 * 1000).rounded()) }
}
