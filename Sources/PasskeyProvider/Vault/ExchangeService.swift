import CTAP2
import Crypto
import CredentialExchange
import Foundation
import PasskeyStoreIO

/// Moving passkeys, saved passwords and one-time codes between stores (`passkey export`, `import`, `import-key`;
/// Docs/Exchange.md). A private key never
/// reaches the disk in clear text here: an export is sealed to an importer's key or under a passphrase before it is
/// written, and every file is created new (0600 for anything secret), never replacing one. Everything that can fail
/// on the arguments fails before the store is unlocked. An import checks every passkey first and adds them in one
/// transaction after the person agrees, so a refusal or one bad entry leaves the store as it was.
public struct ExchangeService: Sendable {
    /// The store, the person and the environment (`PASSKEY_EXPORT_PASSPHRASE`).
    public let access: StoreAccess

    public init(access: StoreAccess) { self.access = access }

    var interface: any ProviderUserInterface { access.interface }

    // MARK: Export

    /// What an export is sealed with.
    public enum Sealing: Sendable {
        /// HPKE to the importer's public key in this JWK file (a CXP ExportResponse).
        case importerKey(path: String)
        /// A passphrase archive; the passphrase from `PASSKEY_EXPORT_PASSPHRASE`, else asked twice.
        case passphrase
    }

    /// What an export did.
    public struct Exported: Sendable {
        /// The sealed file, when no output file was given (for standard output).
        public var bytes: [UInt8]?
        public var count: Int
        /// Passkeys left out because they may not leave this store (BE = 0).
        public var singleDevice: Int
        /// Saved passwords and one-time codes left out because their rows fail their integrity check: an export
        /// carries only what the store vouches for.
        public var passwordsLeftOut: Int
        public var sealedWith: SealedWith
        /// Saved passwords and one-time codes exported (none when passkeys were chosen with `--rp` or `--credential`).
        public var passwords: Int
        public var oneTimeCodes: Int

        public init(
            bytes: [UInt8]?, count: Int, singleDevice: Int, passwordsLeftOut: Int, sealedWith: SealedWith,
            passwords: Int = 0, oneTimeCodes: Int = 0
        ) {
            self.bytes = bytes
            self.count = count
            self.singleDevice = singleDevice
            self.passwordsLeftOut = passwordsLeftOut
            self.sealedWith = sealedWith
            self.passwords = passwords
            self.oneTimeCodes = oneTimeCodes
        }
    }

    /// How the export was sealed, for the person to check.
    public enum SealedWith: Hashable, Sendable {
        /// To the importer key with this fingerprint.
        case importerKey(fingerprint: String)
        /// In a passphrase archive with this KDF and memory.
        case archive(kdf: String, mebibytes: Int)
    }

    /// Exports the store's passkeys (of `relyingParties`, and of the credential IDs in `credentialIDs`, when not
    /// empty) sealed with `sealing`, to a new file at `output` or returned. Without a choice of passkeys the saved
    /// passwords (with their notes) and one-time codes go too.
    public func export(
        sealing: Sealing, relyingParties: [String] = [], credentialIDs: Set<[UInt8]> = [], output: String?
    ) async throws(ProviderError) -> Exported {
        var importerKey: P256.KeyAgreement.PublicKey?
        if case .importerKey(let path) = sealing {
            let bytes = try Self.read(path, what: "the importer key")
            do throws(ExchangeError) {
                importerKey = try P256.KeyAgreement.PublicKey(jwkRepresentation: bytes)
            } catch {
                throw ProviderError("\(path): \(error.message)")
            }
        }
        if let output, Self.exists(output) { throw ProviderError("\(output) already exists; not replacing it") }
        let archivePassphrase = importerKey == nil ? try await archivePassphrase(confirm: true) : nil

        let store = try await access.open(create: false)
        defer { store.close() }
        var selected: [StoredCredential]
        var logins: [ExportedLogin] = []
        var codes: [ExportedOneTimeCode] = []
        var leftOut = 0
        var notes: [[UInt8]: String] = [:]
        do {
            selected = try store.allCredentials()
            // A note that fails its integrity check stays behind: an export carries only what the store vouches for.
            for case (let id, .text(let text)) in try store.notes() { notes[id] = text }
            if relyingParties.isEmpty && credentialIDs.isEmpty {
                (logins, codes, leftOut) = try Self.loginsAndCodes(of: store)
            }
        } catch {
            throw ProviderError(error.message)
        }
        if !relyingParties.isEmpty { selected = selected.filter { relyingParties.contains($0.relyingPartyID) } }
        if !credentialIDs.isEmpty { selected = selected.filter { credentialIDs.contains($0.id) } }
        let (exported, singleDevice) = CXF.Header.exportable(selected)
        guard !exported.isEmpty || !logins.isEmpty || !codes.isEmpty else {
            throw ProviderError(
                "no passkeys to export"
                    + (singleDevice > 0 ? " (\(singleDevice) single-device passkeys may not leave this store)" : ""))
        }
        let document = CXF.Header(
            exporting: exported, notes: notes, logins: logins, oneTimeCodes: codes, exporterRpId: "passkey.local",
            exporterDisplayName: "passkey", at: Date())
        let bytes: [UInt8]
        let sealedWith: SealedWith
        do throws(ExchangeError) {
            if let importerKey {
                bytes = try ExportResponse(sealing: document, to: importerKey).jsonBytes
                sealedWith = .importerKey(fingerprint: Self.fingerprint(importerKey))
            } else {
                let kdf = PassphraseArchive.KDF.default
                bytes = try PassphraseArchive(sealing: document, passphrase: archivePassphrase ?? "", kdf: kdf)
                    .jsonBytes
                sealedWith = .archive(kdf: "\(kdf)", mebibytes: kdf.memoryByteCount >> 20)
            }
        } catch {
            throw ProviderError("cannot export: \(error.message)")
        }
        if let output { try Self.createOwnerOnly(bytes, at: output) }
        return Exported(
            bytes: output == nil ? bytes : nil, count: exported.count, singleDevice: singleDevice,
            passwordsLeftOut: leftOut, sealedWith: sealedWith, passwords: logins.count, oneTimeCodes: codes.count)
    }

    /// The store's intact saved passwords (with their notes) and one-time codes as an export writes them, and how
    /// many rows are left out because they fail their integrity check.
    static func loginsAndCodes(of store: SQLiteCredentialStore) throws(CredentialStoreError) -> (
        [ExportedLogin], [ExportedOneTimeCode], leftOut: Int
    ) {
        var passwordNotes: [[UInt8]: String] = [:]
        for case (let id, .text(let text)) in try store.notes(ofPasswords: true) { passwordNotes[id] = text }
        var leftOut = 0
        var logins: [ExportedLogin] = []
        for entry in try store.passwordEntries() {
            guard case .intact(let credential) = entry else {
                leftOut += 1
                continue
            }
            let login = credential.login
            logins.append(
                ExportedLogin(
                    url: login.service.exchangeURL, title: login.service.host ?? login.service.text,
                    userName: login.userName, password: credential.password, note: passwordNotes[login.id],
                    creationDate: login.creationDate, modificationDate: login.modificationDate))
        }
        var codes: [ExportedOneTimeCode] = []
        for entry in try store.oneTimeCodeEntries() {
            guard case .intact(let code) = entry else {
                leftOut += 1
                continue
            }
            let saved = code.saved
            codes.append(
                ExportedOneTimeCode(
                    url: saved.service.exchangeURL, title: saved.issuer ?? saved.service.host ?? saved.service.text,
                    userName: saved.userName, issuer: saved.issuer, secret: code.secret, parameters: saved.parameters,
                    creationDate: saved.creationDate))
        }
        return (logins, codes, leftOut)
    }

    // MARK: Import

    /// What an import did.
    public struct Imported: Hashable, Sendable {
        public var added: Int
        /// Credential IDs already in the store, skipped.
        public var skippedDuplicates: Int
        /// Credentials in the file not carried (other types, or ones without a site), skipped; each was named in the
        /// preview.
        public var otherTypes: Int
        /// The file held private keys in clear text: the person should delete it.
        public var wasClearText: Bool
        /// Saved passwords and one-time codes added, and those whose login the store already had (kept as it was).
        public var passwordsAdded: Int
        public var passwordsAlreadyPresent: Int
        public var oneTimeCodesAdded: Int
        public var oneTimeCodesAlreadyPresent: Int

        public init(
            added: Int, skippedDuplicates: Int, otherTypes: Int, wasClearText: Bool, passwordsAdded: Int = 0,
            passwordsAlreadyPresent: Int = 0, oneTimeCodesAdded: Int = 0, oneTimeCodesAlreadyPresent: Int = 0
        ) {
            self.added = added
            self.skippedDuplicates = skippedDuplicates
            self.otherTypes = otherTypes
            self.wasClearText = wasClearText
            self.passwordsAdded = passwordsAdded
            self.passwordsAlreadyPresent = passwordsAlreadyPresent
            self.oneTimeCodesAdded = oneTimeCodesAdded
            self.oneTimeCodesAlreadyPresent = oneTimeCodesAlreadyPresent
        }
    }

    /// Imports the passkeys, saved passwords and one-time codes of `file` (opened with the importer key at `key`, or
    /// the archive passphrase) after showing them and asking (`yes`: without asking, reported). A password or code
    /// whose file names no site the store can use is skipped and named with the other types.
    public func `import`(file: String, key: String?, yes: Bool) async throws(ProviderError) -> Imported {
        var contents = try await read(file, key: key)
        let (passwords, codes) = Self.storable(&contents)
        let store = try await access.open(create: false)
        defer { store.close() }
        var entries: [ImportPreview.Entry] = []
        var passwordEntries: [ImportPreview.Login] = []
        var codeEntries: [ImportPreview.Login] = []
        do {
            for passkey in contents.passkeys {
                let credential = passkey.credential
                entries.append(
                    ImportPreview.Entry(
                        relyingPartyID: credential.relyingPartyID, userName: credential.userName,
                        created: credential.creationDate, duplicate: try store.entry(id: credential.id) != nil,
                        notes: passkey.notes))
            }
            for login in passwords {
                passwordEntries.append(
                    ImportPreview.Login(
                        service: login.service.text, userName: login.userName,
                        duplicate: try store.passwordEntry(service: login.service, userName: login.userName) != nil))
            }
            let present = Set(try store.oneTimeCodeEntries().compactMap(Self.login(of:)))
            for code in codes {
                codeEntries.append(
                    ImportPreview.Login(
                        service: code.service.text, userName: code.userName,
                        duplicate: present.contains(Self.LoginKey(service: code.service.text, userName: code.userName)))
                )
            }
        } catch {
            throw ProviderError(error.message)
        }
        interface.report(
            .importing(
                ImportPreview(
                    file: file, source: contents.source, entries: entries, skippedTypes: contents.skippedTypes,
                    passwords: passwordEntries, oneTimeCodes: codeEntries,
                    skipped: contents.skipped.map {
                        ImportPreview.Skipped(type: $0.type, title: $0.title, reason: $0.reason)
                    })))
        let fresh = entries.filter { !$0.duplicate }.count
        let freshPasswords = passwordEntries.filter { !$0.duplicate }.count
        let freshCodes = codeEntries.filter { !$0.duplicate }.count
        if fresh + freshPasswords + freshCodes > 0 {
            let question = ProviderQuestion.importPasskeys(
                count: fresh, passwords: freshPasswords, oneTimeCodes: freshCodes, store: store.url.path)
            switch await ApprovalMode(yes: yes, environment: [:]).answer(
                question, interface: interface, canAsk: access.canAsk)
            {
            case .unattended, .yes: break
            case .no: throw ProviderError("nothing was imported", exitStatus: ExitStatus.declined)
            case nil:
                throw ProviderError("the import needs your approval", hint: "Run it in a terminal, or pass --yes.")
            }
        }
        let outcome: ImportOutcome
        do {
            var notes: [[UInt8]: String] = [:]
            for passkey in contents.passkeys {
                if let note = passkey.note { notes[passkey.credential.id] = note }
            }
            outcome = try store.importCredentials(
                contents.passkeys.map(\.credential), notes: notes, passwords: passwords, oneTimeCodes: codes)
        } catch {
            throw ProviderError(error.message)
        }
        return Imported(
            added: outcome.added.count, skippedDuplicates: outcome.skippedDuplicates.count,
            otherTypes: contents.skipped.count, wasClearText: contents.wasClearText,
            passwordsAdded: outcome.passwordsAdded, passwordsAlreadyPresent: outcome.passwordsAlreadyPresent,
            oneTimeCodesAdded: outcome.oneTimeCodesAdded,
            oneTimeCodesAlreadyPresent: outcome.oneTimeCodesAlreadyPresent)
    }

    struct LoginKey: Hashable {
        var service: String
        var userName: String
    }

    static func login(of entry: OneTimeCodeEntry) -> LoginKey? {
        switch entry {
        case .intact(let code): LoginKey(service: code.saved.service.text, userName: code.saved.userName)
        case .damaged(let damaged):
            damaged.service.flatMap { service in damaged.userName.map { LoginKey(service: service, userName: $0) } }
        }
    }

    /// The file's passwords and codes as the store keeps them, each under the first of its URLs that names a site
    /// (`PasswordService.named(byExchangeURL:)`); those with none are moved to `contents.skipped`, named. A password or code
    /// that comes twice for one login is carried once, the later ones named as skipped.
    static func storable(_ contents: inout ImportContents) -> ([PasswordImport], [OneTimeCodeImport]) {
        let noSite = "it names no web site or app this store can keep it for"
        var passwords: [PasswordImport] = []
        var seen = Set<LoginKey>()
        for login in contents.passwords {
            guard let service = login.urls.lazy.compactMap(PasswordService.named(byExchangeURL:)).first else {
                contents.skipped.append(SkippedCredential(type: "basic-auth", title: login.title, reason: noSite))
                continue
            }
            guard login.password.utf8.count <= SQLiteCredentialStore.maximumPasswordLength,
                login.userName.utf8.count <= SQLiteCredentialStore.maximumUserNameLength
            else {
                contents.skipped.append(
                    SkippedCredential(
                        type: "basic-auth", title: login.title,
                        reason: "its password is over \(SQLiteCredentialStore.maximumPasswordLength) bytes or its "
                            + "user name over \(SQLiteCredentialStore.maximumUserNameLength)"))
                continue
            }
            guard seen.insert(LoginKey(service: service.text, userName: login.userName)).inserted else {
                contents.skipped.append(
                    SkippedCredential(
                        type: "basic-auth", title: login.title, reason: "the file has another password for this login"))
                continue
            }
            passwords.append(
                PasswordImport(
                    service: service, userName: login.userName, password: login.password, note: login.note,
                    creationDate: login.creationDate))
        }
        var codes: [OneTimeCodeImport] = []
        seen = []
        for code in contents.oneTimeCodes {
            guard let service = code.urls.lazy.compactMap(PasswordService.named(byExchangeURL:)).first else {
                contents.skipped.append(SkippedCredential(type: "totp", title: code.title, reason: noSite))
                continue
            }
            guard code.userName.utf8.count <= SQLiteCredentialStore.maximumUserNameLength,
                (code.issuer?.utf8.count ?? 0) <= SQLiteCredentialStore.maximumUserNameLength
            else {
                contents.skipped.append(
                    SkippedCredential(
                        type: "totp", title: code.title,
                        reason: "its user name or issuer is over \(SQLiteCredentialStore.maximumUserNameLength) bytes"))
                continue
            }
            guard seen.insert(LoginKey(service: service.text, userName: code.userName)).inserted else {
                contents.skipped.append(
                    SkippedCredential(
                        type: "totp", title: code.title, reason: "the file has another one-time code for this login"))
                continue
            }
            codes.append(
                OneTimeCodeImport(
                    service: service, userName: code.userName, issuer: code.issuer, parameters: code.parameters,
                    secret: code.secret, creationDate: code.creationDate))
        }
        return (passwords, codes)
    }

    /// The file's passkeys, opened with the key or passphrase it needs and checked.
    private func read(_ file: String, key: String?) async throws(ProviderError) -> ImportContents {
        let bytes = try Self.read(file, what: "the import file")
        let parsed: ImportFile
        do throws(ExchangeError) {
            parsed = try ImportFile(bytes: bytes, now: Date())
        } catch {
            throw Self.cannotImport(file, error)
        }
        switch parsed {
        case .clearText(let contents):
            return contents
        case .exportResponse(let response):
            guard let key else {
                throw ProviderError(
                    "\(file) is sealed to an importer key", hint: "Give its private key with --key FILE.")
            }
            let keyBytes = try Self.read(key, what: "the key")
            do throws(ExchangeError) {
                let privateKey = try P256.KeyAgreement.PrivateKey(jwkRepresentation: keyBytes)
                return try response.open(with: privateKey).importContents(
                    source: "export from \(response.exporter)", wasClearText: false)
            } catch {
                throw Self.cannotImport(file, error)
            }
        case .archive(let archive):
            let passphrase = try await archivePassphrase(confirm: false)
            do throws(ExchangeError) {
                return try archive.open(passphrase: passphrase).importContents(
                    source: "passkey archive", wasClearText: false)
            } catch {
                throw Self.cannotImport(file, error)
            }
        }
    }

    /// What is wrong inside an import file, each bad entry on a line of the hint.
    static func cannotImport(_ file: String, _ error: ExchangeError) -> ProviderError {
        var hint: String?
        if !error.problems.isEmpty {
            hint = error.problems.map { "  \($0.location): \($0.reason)" }.joined(separator: "\n")
        }
        return ProviderError("cannot import \(file): \(error.message)", hint: hint)
    }

    // MARK: Importer keys

    /// Makes an importer key pair: the private key created 0600 at `output`, the public key beside it
    /// (`publicKeyPath`) for others to read. Neither replaces a file. Returns the public key's fingerprint.
    public static func newImporterKey(output: String) throws(ProviderError) -> String {
        for path in [output, publicKeyPath(for: output)] where exists(path) {
            throw ProviderError("\(path) already exists; not replacing it")
        }
        let key = P256.KeyAgreement.PrivateKey(compactRepresentable: false)
        try createOwnerOnly(key.jwkRepresentation, at: output)
        try writeNew(key.publicKey.jwkRepresentation, to: publicKeyPath(for: output), mode: 0o644)
        return fingerprint(key.publicKey)
    }

    /// Where `newImporterKey` puts the public key: `.jwk` replaced by `.pub.jwk`.
    public static func publicKeyPath(for output: String) -> String {
        (output.hasSuffix(".jwk") ? String(output.dropLast(4)) : output) + ".pub.jwk"
    }

    /// The first 8 bytes of SHA-256 of the key's uncompressed point, in hex: to compare keys by eye.
    public static func fingerprint(_ key: P256.KeyAgreement.PublicKey) -> String {
        SHA256.hash(data: key.x963Representation).prefix(8).map { String(format: "%02x", $0) }.joined(separator: ":")
    }

    // MARK: Secrets

    /// The archive passphrase: `PASSKEY_EXPORT_PASSPHRASE`, or asked without echo (twice for a new archive).
    func archivePassphrase(confirm: Bool) async throws(ProviderError) -> String {
        if let value = access.environment["PASSKEY_EXPORT_PASSPHRASE"] {
            guard !value.isEmpty else { throw ProviderError("PASSKEY_EXPORT_PASSPHRASE is set but empty") }
            return value
        }
        guard access.canAsk else {
            throw ProviderError(
                "the archive needs a passphrase", hint: "Set PASSKEY_EXPORT_PASSPHRASE, or run passkey in a terminal.")
        }
        guard case .given(let first) = await interface.secret(.archivePassphrase(confirming: false)), !first.isEmpty
        else { throw ProviderError("no passphrase given") }
        guard confirm else { return first }
        guard case .given(let second) = await interface.secret(.archivePassphrase(confirming: true)), second == first
        else { throw ProviderError("the passphrases do not match; nothing was written") }
        return first
    }
}

/// What an import will add, shown before the person is asked.
public struct ImportPreview: Hashable, Sendable {
    /// A saved password or one-time code: its login, and whether the store has one for it already (skipped).
    public struct Login: Hashable, Sendable {
        public var service: String
        public var userName: String
        public var duplicate: Bool
    }

    public struct Entry: Hashable, Sendable {
        public var relyingPartyID: String
        public var userName: String?
        public var created: Date
        /// Already in the store: skipped.
        public var duplicate: Bool
        /// What the reader noticed about this passkey.
        public var notes: [String]
    }

    /// The file, as the person named it.
    public var file: String
    /// What the file is ("Bitwarden export", "passkey archive").
    public var source: String
    public var entries: [Entry]
    /// Credentials not carried, by type, skipped.
    public var skippedTypes: [String: Int]
    public var passwords: [Login] = []
    public var oneTimeCodes: [Login] = []
    /// Each credential not carried, named by its item.
    public var skipped: [Skipped] = []

    /// A credential not carried: its type, its item's title and why.
    public struct Skipped: Hashable, Sendable {
        public var type: String
        public var title: String
        public var reason: String
    }
}

extension PasswordService {
    /// The URL an export writes for the service: `https://` and the domain, the origin, or an app ID as it is (the
    /// format has no member for an Apple app ID).
    public var exchangeURL: String {
        switch kind {
        case .domain: "https://\(text)"
        case .origin, .app: text
        }
    }

    /// The service an import file's URL names: a domain, an https origin or an app ID as a password's service is
    /// written, or the host of an `http`/`https` URL (`https://example.com/login` → `example.com`; with a port other
    /// than 443, the https origin). Nil for anything else (an Android app, a URL without a host).
    public static func named(byExchangeURL raw: String) -> PasswordService? {
        let text = raw.trimmingCharacters(in: .whitespaces)
        if let service = PasswordService(text) {
            // `https://example.com` is how a domain is exported: it comes back as the domain.
            if service.kind == .origin, let host = service.host, service.text == "https://\(host)" {
                return PasswordService(host)
            }
            return service
        }
        guard let components = URLComponents(string: text),
            let scheme = components.scheme?.lowercased(), scheme == "https" || scheme == "http",
            let host = components.host, !host.isEmpty
        else { return nil }
        if scheme == "https", let port = components.port, port != 443 {
            return PasswordService("https://\(host):\(port)")
        }
        return PasswordService(host)
    }
}
