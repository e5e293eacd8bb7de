import Basics
import Foundation
import JSON

/// Bitwarden's unencrypted JSON export (`bw export --format json`, or the web vault's "File format: .json"): each
/// login item's `login.fido2Credentials[]` is one passkey, its `login.username` and `login.password` a saved password
/// for the sites of `login.uris[].uri`, its `login.totp` (an `otpauth://totp/` URI or a bare base32 secret) a
/// one-time code for the same login, and the item's `notes` the note of its password (and passkeys). Other item types
/// (secure notes, cards, identities, SSH keys) and custom fields are named as skipped.
///
/// The shapes are Bitwarden's own (libs/common `Fido2CredentialExport`): `credentialId` is a GUID string
/// (`xxxxxxxx-xxxx-…`, its 16 bytes in order) or `b64.` followed by base64url; `keyValue` is base64url PKCS#8;
/// `userHandle` base64url; `discoverable` and `counter` are strings (`"true"`, `"0"`); `creationDate` ISO 8601.
public enum BitwardenExport {
    public static let source = "Bitwarden export"

    /// Bitwarden's item types other than login (1), as the skipped list names them.
    static let itemTypes = [2: "secure note", 3: "card", 4: "identity", 5: "SSH key"]

    /// Reads the passkeys, passwords and one-time codes of an export; a password-protected or account-encrypted
    /// export is refused. `now` dates passwords of items without a `creationDate`.
    public static func read(_ json: JSONValue, now: Date = Date(timeIntervalSince1970: 0)) throws(ExchangeError)
        -> ImportContents
    {
        let fields = try JSONFields(json, path: "")
        if try fields.bool("encrypted") == true || fields.has("passwordProtected") {
            throw ExchangeError(
                .encryptedExport,
                "this Bitwarden export is encrypted; export again as unencrypted .json (and delete it after the import)"
            )
        }
        var contents = ImportContents(source: source, passkeys: [], wasClearText: true)
        var problems: [EntryProblem] = []
        for (itemIndex, itemValue) in try fields.requiredArray("items").enumerated() {
            let item = try JSONFields(itemValue, path: "items[\(itemIndex)]")
            let title = try item.string("name").flatMap { $0.isEmpty ? nil : $0 } ?? item.path
            if let custom = try item.array("fields"), !custom.isEmpty {
                contents.skipped.append(
                    SkippedCredential(
                        type: "custom field", title: title,
                        reason: "\(custom.count.counted("custom field")) not kept (this program has no custom fields)"))
            }
            guard let login = item.value("login") else {
                let type = try item.unsigned("type").flatMap { itemTypes[Int($0)] } ?? "item"
                contents.skipped.append(
                    SkippedCredential(type: type, title: title, reason: SkippedCredential.notCarried))
                continue
            }
            let note = try item.string("notes").flatMap { $0.isEmpty ? nil : $0 }
            let noteFits = (note?.utf8.count ?? 0) <= CXF.Header.maximumNoteLength
            let created = try date(item, "creationDate") ?? now
            let loginFields = try JSONFields(login, path: item.name("login"))
            var carried = false
            var noteKept = false
            for (index, value) in (try loginFields.array("fido2Credentials") ?? []).enumerated() {
                let location = loginFields.name("fido2Credentials[\(index)]")
                do {
                    var imported = try passkey(value, location: location)
                    if noteFits { imported.note = note }
                    contents.passkeys.append(imported)
                    carried = true
                    noteKept = true
                } catch {
                    problems +=
                        error.problems.isEmpty
                        ? [EntryProblem(location: location, reason: error.message)] : error.problems
                }
            }
            var urls: [String] = []
            for (index, value) in (try loginFields.array("uris") ?? []).enumerated() {
                let uri = try JSONFields(value, path: loginFields.name("uris[\(index)]"))
                if let text = try uri.string("uri"), !text.isEmpty { urls.append(text) }
            }
            let userName = try loginFields.string("username") ?? ""
            if let password = try loginFields.string("password"), !password.isEmpty {
                contents.passwords.append(
                    ImportedPassword(
                        urls: urls, userName: userName, password: password, note: noteFits ? note : nil,
                        creationDate: created, title: title))
                carried = true
                noteKept = true
            }
            if let totp = try loginFields.string("totp"), !totp.isEmpty {
                do throws(OTPAuthURI.Problem) {
                    let code = try OTPAuthURI(uriOrSecret: totp)
                    contents.oneTimeCodes.append(
                        ImportedOneTimeCode(
                            urls: urls, userName: userName.isEmpty ? code.accountName : userName, issuer: code.issuer,
                            secret: code.secret, parameters: code.parameters, creationDate: created, title: title))
                    carried = true
                } catch {
                    contents.skipped.append(SkippedCredential(type: "totp", title: title, reason: error.message))
                }
            }
            if !carried, !userName.isEmpty || !urls.isEmpty {
                contents.skipped.append(SkippedCredential(type: "login", title: title, reason: "it has no password"))
            }
            if note != nil, !noteKept || !noteFits {
                contents.skipped.append(
                    SkippedCredential(
                        type: "note", title: title,
                        reason: noteFits
                            ? "a note is kept only with a passkey or password of its item"
                            : "it is longer than \(CXF.Header.maximumNoteLength) bytes"))
            }
        }
        guard problems.isEmpty else { throw ExchangeError.entries(problems) }
        return contents
    }

    private static func passkey(_ value: JSONValue, location: String) throws(ExchangeError) -> ImportedPasskey {
        let fields = try JSONFields(value, path: location)
        if let type = try fields.string("keyType"), type != "public-key" {
            throw ExchangeError(.invalidValue, "keyType is \(type.debugDescription), not \"public-key\"")
        }
        if let algorithm = try fields.string("keyAlgorithm"), algorithm != "ECDSA" {
            throw ExchangeError(
                .invalidKey, "keyAlgorithm is \(algorithm.debugDescription); only ECDSA (ES256) is supported")
        }
        if let curve = try fields.string("keyCurve"), curve != "P-256" {
            throw ExchangeError(.invalidKey, "keyCurve is \(curve.debugDescription); only P-256 is supported")
        }
        guard let id = credentialID(try fields.requiredString("credentialId")) else {
            throw ExchangeError(.invalidValue, "credentialId is neither a GUID nor b64.<base64url>")
        }
        let keyText = try fields.requiredString("keyValue")
        guard let keyBytes = [UInt8](base64URLEncoded: keyText) else {
            throw ExchangeError(.invalidValue, "keyValue is not base64url")
        }
        let discoverable = try flag(fields, "discoverable") ?? true
        return try PasskeyDraft(
            credentialID: id, rpID: try fields.requiredString("rpId"), rpName: try fields.string("rpName"),
            userHandle: try fields.bytes("userHandle") ?? [], userName: try fields.string("userName"),
            userDisplayName: try fields.string("userDisplayName"), privateKey: try PrivateKeyReading.pkcs8(keyBytes),
            creationDate: try date(fields, "creationDate") ?? Date(timeIntervalSince1970: 0),
            discoverable: discoverable,
            counter: try counter(fields) ?? 0
        ).checked(location: location)
    }

    /// A credential ID as Bitwarden writes it: `b64.` and base64url, or a GUID's 16 bytes in text order.
    static func credentialID(_ text: String) -> [UInt8]? {
        if text.hasPrefix("b64.") { return [UInt8](base64URLEncoded: String(text.dropFirst(4))) }
        let groups = text.split(separator: "-", omittingEmptySubsequences: false)
        guard groups.map(\.count) == [8, 4, 4, 4, 12] else { return nil }
        return [UInt8](hex: groups.joined())
    }

    /// `"true"`/`"false"` as Bitwarden writes booleans, or a JSON boolean.
    private static func flag(_ fields: JSONFields, _ key: String) throws(ExchangeError) -> Bool? {
        switch fields.value(key) {
        case nil: return nil
        case .bool(let flag): return flag
        case .string("true"): return true
        case .string("false"): return false
        default: throw ExchangeError(.invalidValue, "\(key) must be \"true\" or \"false\"")
        }
    }

    /// The signature counter: a decimal string, or a JSON number.
    private static func counter(_ fields: JSONFields) throws(ExchangeError) -> UInt64? {
        switch fields.value("counter") {
        case nil: return nil
        case .string(let text):
            guard let counter = UInt64(text) else {
                throw ExchangeError(.invalidValue, "counter is not a whole number")
            }
            return counter
        default: return try fields.unsigned("counter")
        }
    }

    static func date(_ fields: JSONFields, _ key: String) throws(ExchangeError) -> Date? {
        guard let text = try fields.string(key) else { return nil }
        let withFraction = ISO8601DateFormatter()
        withFraction.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        guard let date = withFraction.date(from: text) ?? ISO8601DateFormatter().date(from: text) else {
            throw ExchangeError(.invalidValue, "\(key) is not an ISO 8601 date")
        }
        return date
    }
}

/// KeePassXC's `.passkey` file (Entry → Passkey → Export): one JSON object, or an array of them, with
/// `relyingParty`, `url`, `username`, `credentialId` and `userHandle` (base64url) and `privateKey` (PEM PKCS#8).
public enum KeePassXCPasskey {
    public static let source = "KeePassXC passkey file"

    /// Whether `json` looks like a `.passkey` file (an object, or array of objects, with `privateKey`).
    static func matches(_ json: JSONValue) -> Bool {
        switch json {
        case .object: json["privateKey"] != nil && json["relyingParty"] != nil
        case .array(let elements): !elements.isEmpty && elements.allSatisfy { $0["privateKey"] != nil }
        default: false
        }
    }

    /// Reads the passkeys; they are dated `now`, as the file carries no creation time.
    public static func read(_ json: JSONValue, now: Date) throws(ExchangeError) -> ImportContents {
        let entries: [(String, JSONValue)]
        if case .array(let elements) = json {
            entries = elements.enumerated().map { ("[\($0.offset)]", $0.element) }
        } else {
            entries = [("the passkey", json)]
        }
        var passkeys: [ImportedPasskey] = []
        var problems: [EntryProblem] = []
        for (location, value) in entries {
            do throws(ExchangeError) {
                let fields = try JSONFields(value, path: location)
                guard let id = try fields.bytes("credentialId"), let handle = try fields.bytes("userHandle") else {
                    throw ExchangeError(.missingField, "credentialId and userHandle are required")
                }
                passkeys.append(
                    try PasskeyDraft(
                        credentialID: id, rpID: try fields.requiredString("relyingParty"), userHandle: handle,
                        userName: try fields.requiredString("username"),
                        privateKey: try PrivateKeyReading.pem(try fields.requiredString("privateKey")),
                        creationDate: now
                    ).checked(location: location))
            } catch {
                problems +=
                    error.problems.isEmpty ? [EntryProblem(location: location, reason: error.message)] : error.problems
            }
        }
        guard problems.isEmpty else { throw ExchangeError.entries(problems) }
        return ImportContents(source: source, passkeys: passkeys, wasClearText: true)
    }
}

/// A file given to `passkey import`, recognized by its members.
public enum ImportFile: Sendable {
    /// A CXP export sealed to an importer key: needs the private key to open.
    case exportResponse(ExportResponse)
    /// A passphrase archive: needs the passphrase.
    case archive(PassphraseArchive)
    /// A clear-text file (CXF JSON, Bitwarden JSON, KeePassXC `.passkey` or CSV), already read and checked.
    case clearText(ImportContents)

    /// The largest import file read.
    public static let maximumBytes = ExchangeJSON.maximumBytes

    /// Recognizes and reads `bytes`; `now` dates passkeys whose file has no creation time.
    public init(bytes: [UInt8], now: Date) throws(ExchangeError) {
        if KeePassXCCSV.matches(bytes) {
            self = .clearText(try KeePassXCCSV.read(bytes, now: now))
            return
        }
        let json = try ExchangeJSON.parse(bytes, what: "the file")
        if KeePassXCPasskey.matches(json) {
            self = .clearText(try KeePassXCPasskey.read(json, now: now))
        } else if json["payload"] != nil, json["hpke"] != nil {
            self = .exportResponse(try ExportResponse(json: json))
        } else if json["format"] != nil, json["kdf"] != nil {
            self = .archive(try PassphraseArchive(json: json))
        } else if json["exporterRpId"] != nil, json["accounts"] != nil {
            self = .clearText(try CXF.Header(json: json).importContents(source: "CXF document", wasClearText: true))
        } else if json["items"] != nil || json["encrypted"] != nil {
            self = .clearText(try BitwardenExport.read(json, now: now))
        } else {
            throw ExchangeError(
                .unknownFormat,
                "the file is not a passkey export, a passkey archive, a CXF document, a Bitwarden JSON export, a "
                    + "KeePassXC .passkey file or a KeePassXC CSV export")
        }
    }
}
