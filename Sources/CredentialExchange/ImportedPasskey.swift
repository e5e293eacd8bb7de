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

/// A saved password read from an import file: a login, where it is used, and its note.
///
/// `description` and `dump` never show the password.
public struct ImportedPassword: Sendable, CustomStringConvertible, CustomReflectable {
    /// Where it is used, as the file writes it (`https://example.com/login`, `example.com`, an app ID); the store
    /// decides which one names its service.
    public var urls: [String]
    public var userName: String
    public var password: String
    /// The person's own note: a CXF `note` in the same item, Bitwarden's `notes`.
    public var note: String?
    public var creationDate: Date
    /// The item's title, to name it in messages.
    public var title: String

    public init(urls: [String], userName: String, password: String, note: String?, creationDate: Date, title: String) {
        self.urls = urls
        self.userName = userName
        self.password = password
        self.note = note
        self.creationDate = creationDate
        self.title = title
    }

    public var description: String { "password for \(userName.debugDescription) (\(title.debugDescription), hidden)" }

    public var customMirror: Mirror {
        Mirror(self, children: ["urls": urls, "userName": userName, "title": title], displayStyle: .struct)
    }
}

/// A one-time-code secret read from an import file, for a login. `description` and `dump` never show the secret.
public struct ImportedOneTimeCode: Sendable, CustomStringConvertible, CustomReflectable {
    /// Where its login is used, as for `ImportedPassword.urls`.
    public var urls: [String]
    public var userName: String
    public var issuer: String?
    public var secret: [UInt8]
    public var parameters: OneTimeCode.Parameters
    public var creationDate: Date
    public var title: String

    public init(
        urls: [String], userName: String, issuer: String?, secret: [UInt8], parameters: OneTimeCode.Parameters,
        creationDate: Date, title: String
    ) {
        self.urls = urls
        self.userName = userName
        self.issuer = issuer
        self.secret = secret
        self.parameters = parameters
        self.creationDate = creationDate
        self.title = title
    }

    public var description: String { "one-time code for \(userName.debugDescription) (\(title.debugDescription))" }

    public var customMirror: Mirror {
        Mirror(self, children: ["urls": urls, "userName": userName, "title": title], displayStyle: .struct)
    }
}

/// A credential in an import file that is not imported, named by its item's title so the person can find it.
public struct SkippedCredential: Hashable, Sendable, CustomStringConvertible {
    /// Its type as the file names it: `ssh-key`, `credit-card`, `note`, or a Bitwarden item type.
    public var type: String
    /// The item's title (or a location when it has none).
    public var title: String
    /// Why: this program does not carry the type, or what is wrong with this one.
    public var reason: String

    public init(type: String, title: String, reason: String) {
        self.type = type
        self.title = title
        self.reason = reason
    }

    public var description: String { "\(type) \(title.debugDescription): \(reason)" }

    /// The reason for a type this program does not carry.
    public static let notCarried = "this program does not keep this type"
}

/// What an import file holds: the passkeys, passwords and one-time codes that passed every check, and what was left
/// aside, each named.
public struct ImportContents: Sendable {
    /// The file's kind, for messages: "CXF", "passkey archive", "Bitwarden export", "KeePassXC passkey".
    public var source: String
    public var passkeys: [ImportedPasskey]
    public var passwords: [ImportedPassword]
    public var oneTimeCodes: [ImportedOneTimeCode]
    /// Every credential not carried (CXF `ssh-key`, `credit-card`, a note of an item with nothing else, …).
    public var skipped: [SkippedCredential]
    /// Whether the file itself was clear text that holds private keys: the user is told to delete it.
    public var wasClearText: Bool

    public init(
        source: String, passkeys: [ImportedPasskey], passwords: [ImportedPassword] = [],
        oneTimeCodes: [ImportedOneTimeCode] = [], skipped: [SkippedCredential] = [], wasClearText: Bool
    ) {
        self.source = source
        self.passkeys = passkeys
        self.passwords = passwords
        self.oneTimeCodes = oneTimeCodes
        self.skipped = skipped
        self.wasClearText = wasClearText
    }

    /// The skipped credentials counted by type.
    public var skippedTypes: [String: Int] {
        skipped.reduce(into: [:]) { $0[$1.type, default: 0] += 1 }
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

/// A saved password as an export writes it: a `basic-auth` credential in an item whose `scope.urls` holds `url`.
public struct ExportedLogin: Sendable {
    /// The login's site as a URL (`https://example.com`), or an app ID as it is.
    public var url: String
    public var title: String
    public var userName: String
    public var password: String
    public var note: String?
    public var creationDate: Date
    public var modificationDate: Date

    public init(
        url: String, title: String, userName: String, password: String, note: String?, creationDate: Date,
        modificationDate: Date
    ) {
        self.url = url
        self.title = title
        self.userName = userName
        self.password = password
        self.note = note
        self.creationDate = creationDate
        self.modificationDate = modificationDate
    }
}

/// A one-time-code secret as an export writes it: a `totp` credential in its login's item, or its own.
public struct ExportedOneTimeCode: Sendable {
    public var url: String
    public var title: String
    public var userName: String
    public var issuer: String?
    public var secret: [UInt8]
    public var parameters: OneTimeCode.Parameters
    public var creationDate: Date

    public init(
        url: String, title: String, userName: String, issuer: String?, secret: [UInt8],
        parameters: OneTimeCode.Parameters, creationDate: Date
    ) {
        self.url = url
        self.title = title
        self.userName = userName
        self.issuer = issuer
        self.secret = secret
        self.parameters = parameters
        self.creationDate = creationDate
    }
}

extension CXF.Header {
    /// A document holding `credentials`, one item each, then `logins`, one item each with its note and its one-time
    /// code (the code of the same URL and user name), then the codes of no saved login, one item each; all in one
    /// account, for an export made at `date`.
    ///
    /// Credentials that are not backup eligible (BE = 0) are single-device credentials by their own flag and are
    /// left out; the caller counts them (`exportable(_:)`).
    /// `notes` are the passkeys' notes by credential ID, each written as a `note` credential in its passkey's item.
    public init(
        exporting credentials: [StoredCredential], notes: [[UInt8]: String] = [:], logins: [ExportedLogin] = [],
        oneTimeCodes: [ExportedOneTimeCode] = [], exporterRpId: String, exporterDisplayName: String, at date: Date
    ) {
        func seconds(_ date: Date) -> UInt64 { UInt64(max(0, date.timeIntervalSince1970)) }
        func scope(_ url: String) -> JSONValue { .object([.init("urls", .array([.string(url)]))]) }
        var items = credentials.map { credential in
            let created = seconds(credential.creationDate)
            return CXF.Item(
                id: Array(SHA256.hash(data: credential.id).prefix(16)), creationAt: created, modifiedAt: created,
                title: credential.relyingPartyName ?? credential.relyingPartyID,
                subtitle: credential.userName,
                scope: scope("https://\(credential.relyingPartyID)"),
                credentials: [.passkey(CXF.Passkey(credential))] + (notes[credential.id].map { [.note($0)] } ?? []))
        }
        var codes = oneTimeCodes
        for login in logins {
            var credentials: [CXF.Credential] = [
                .basicAuth(CXF.BasicAuth(username: login.userName, password: login.password))
            ]
            if let note = login.note { credentials.append(.note(note)) }
            if let index = codes.firstIndex(where: { $0.url == login.url && $0.userName == login.userName }) {
                credentials.append(.totp(CXF.TOTP(codes.remove(at: index))))
            }
            items.append(
                CXF.Item(
                    id: Self.itemID("basic-auth", login.url, login.userName), creationAt: seconds(login.creationDate),
                    modifiedAt: seconds(login.modificationDate), title: login.title, subtitle: login.userName,
                    scope: scope(login.url), credentials: credentials))
        }
        for code in codes {
            items.append(
                CXF.Item(
                    id: Self.itemID("totp", code.url, code.userName), creationAt: seconds(code.creationDate),
                    modifiedAt: seconds(code.creationDate), title: code.title, subtitle: code.userName,
                    scope: scope(code.url), credentials: [.totp(CXF.TOTP(code))]))
        }
        self.init(
            exporterRpId: exporterRpId, exporterDisplayName: exporterDisplayName, timestamp: seconds(date),
            accounts: [CXF.Account(id: Array("passkey".utf8), username: "", email: "", items: items)])
    }

    /// A stable item ID for a login: the first 16 bytes of SHA-256 of what it is for.
    private static func itemID(_ kind: String, _ url: String, _ userName: String) -> [UInt8] {
        Array(SHA256.hash(data: Array("\(kind)\0\(url)\0\(userName)".utf8)).prefix(16))
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

    /// The passkeys, passwords and one-time codes of this document, each checked; every other credential is named
    /// in `skipped`. Any bad passkey fails the whole read with `.invalidEntries`, listing every one, so that nothing
    /// partial is imported.
    ///
    /// A `note` goes with the passkeys and the `basic-auth` of its item; a `totp` without a `username` takes the
    /// item's `basic-auth` user name. Where a password or code is used comes from the item's `scope.urls`.
    public func importContents(source: String, wasClearText: Bool) throws(ExchangeError) -> ImportContents {
        var contents = ImportContents(source: source, passkeys: [], wasClearText: wasClearText)
        var problems: [EntryProblem] = []
        for (a, account) in accounts.enumerated() {
            for (i, item) in account.items.enumerated() {
                let created = Date(timeIntervalSince1970: TimeInterval(item.creationAt ?? timestamp))
                let title = item.title.isEmpty ? "accounts[\(a)].items[\(i)]" : item.title
                let note = item.credentials.lazy.compactMap { if case .note(let text) = $0 { text } else { nil } }
                    .first
                let noteFits = (note?.utf8.count ?? 0) <= Self.maximumNoteLength
                let urls = Self.urls(of: item)
                let login = item.credentials.lazy.compactMap {
                    if case .basicAuth(let login) = $0 { login } else { nil }
                }
                .first
                var noteCarried = false
                for (c, credential) in item.credentials.enumerated() {
                    let location = "accounts[\(a)].items[\(i)].credentials[\(c)]"
                    switch credential {
                    case .passkey(let passkey):
                        do {
                            var imported = try Self.imported(passkey, location: location, created: created)
                            if let note {
                                if noteFits {
                                    imported.note = note
                                    noteCarried = true
                                } else {
                                    imported.notes.append(
                                        "its note is not kept: it is longer than \(Self.maximumNoteLength) bytes")
                                }
                            }
                            contents.passkeys.append(imported)
                        } catch {
                            problems +=
                                error.problems.isEmpty
                                ? [EntryProblem(location: location, reason: error.message)] : error.problems
                        }
                    case .basicAuth(let basic):
                        guard let password = basic.password, !password.isEmpty else {
                            contents.skipped.append(
                                .init(type: credential.type, title: title, reason: "it has no password"))
                            continue
                        }
                        noteCarried = noteCarried || (note != nil && noteFits)
                        contents.passwords.append(
                            ImportedPassword(
                                urls: urls, userName: basic.username ?? "", password: password,
                                note: noteFits ? note : nil, creationDate: created, title: title))
                    case .totp(let totp):
                        contents.oneTimeCodes.append(
                            ImportedOneTimeCode(
                                urls: urls, userName: totp.username ?? login?.username ?? "", issuer: totp.issuer,
                                secret: totp.secret, parameters: totp.parameters, creationDate: created, title: title))
                    case .note:
                        break
                    case .other(let type, _):
                        let reason =
                            [CXF.BasicAuth.type, CXF.TOTP.type, CXF.Credential.noteType].contains(type)
                            ? "its fields are not ones this program can use (an unknown algorithm, a secret that is "
                                + "not base32, a field that is not text)"
                            : SkippedCredential.notCarried
                        contents.skipped.append(.init(type: type, title: title, reason: reason))
                    }
                }
                if note != nil, !noteCarried {
                    contents.skipped.append(
                        .init(
                            type: CXF.Credential.noteType, title: title,
                            reason: noteFits
                                ? "a note is kept only with a passkey or password of its item"
                                : "it is longer than \(Self.maximumNoteLength) bytes"))
                }
            }
        }
        guard problems.isEmpty else { throw ExchangeError.entries(problems) }
        return contents
    }

    /// The passkey as the store will keep it, checked.
    private static func imported(_ passkey: CXF.Passkey, location: String, created: Date) throws(ExchangeError)
        -> ImportedPasskey
    {
        var draft = PasskeyDraft(
            credentialID: passkey.credentialID, rpID: passkey.rpID, userHandle: passkey.userHandle,
            userName: passkey.username.isEmpty ? nil : passkey.username,
            userDisplayName: passkey.userDisplayName.isEmpty ? nil : passkey.userDisplayName,
            privateKey: try PrivateKeyReading.pkcs8(passkey.key), creationDate: created,
            credentialBlob: passkey.fido2Extensions?.credBlob,
            hmacCredentials: passkey.fido2Extensions?.hmacCredentials)
        if passkey.fido2Extensions?.largeBlob != nil {
            draft.notes.append("its largeBlob is not imported (this store keeps no per-passkey blobs)")
        }
        return try draft.checked(location: location)
    }

    /// The item's `scope.urls` that are strings.
    static func urls(of item: CXF.Item) -> [String] {
        guard case .object(let members)? = item.scope,
            case .array(let values)? = members.first(where: { $0.key == "urls" })?.value
        else { return [] }
        return values.compactMap { if case .string(let url) = $0 { url } else { nil } }
    }
}

extension CXF.TOTP {
    init(_ code: ExportedOneTimeCode) {
        self.init(secret: code.secret, parameters: code.parameters, username: code.userName, issuer: code.issuer)
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
