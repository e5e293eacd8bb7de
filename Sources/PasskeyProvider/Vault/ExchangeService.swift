import CTAP2
import Crypto
import CredentialExchange
import Foundation
import PasskeyStoreIO

/// Moving passkeys between stores (`passkey export`, `import`, `import-key`; Docs/Exchange.md). A private key never
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
        /// Saved passwords in the store, which an export does not carry yet (issue 24: it left them behind without a
        /// word).
        public var passwordsLeftOut: Int
        public var sealedWith: SealedWith

        public init(bytes: [UInt8]?, count: Int, singleDevice: Int, passwordsLeftOut: Int, sealedWith: SealedWith) {
            self.bytes = bytes
            self.count = count
            self.singleDevice = singleDevice
            self.passwordsLeftOut = passwordsLeftOut
            self.sealedWith = sealedWith
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
    /// empty) sealed with `sealing`, to a new file at `output` or returned.
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
        let passwords: Int
        var notes: [[UInt8]: String] = [:]
        do {
            selected = try store.allCredentials()
            passwords = relyingParties.isEmpty && credentialIDs.isEmpty ? try store.passwords().count : 0
            // A note that fails its integrity check stays behind: an export carries only what the store vouches for.
            for case (let id, .text(let text)) in try store.notes() { notes[id] = text }
        } catch {
            throw ProviderError(error.message)
        }
        if !relyingParties.isEmpty { selected = selected.filter { relyingParties.contains($0.relyingPartyID) } }
        if !credentialIDs.isEmpty { selected = selected.filter { credentialIDs.contains($0.id) } }
        let (exported, singleDevice) = CXF.Header.exportable(selected)
        guard !exported.isEmpty else {
            throw ProviderError(
                "no passkeys to export"
                    + (singleDevice > 0 ? " (\(singleDevice) single-device passkeys may not leave this store)" : ""))
        }
        let document = CXF.Header(
            exporting: exported, notes: notes, exporterRpId: "passkey.local", exporterDisplayName: "passkey",
            at: Date())
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
            passwordsLeftOut: passwords, sealedWith: sealedWith)
    }

    // MARK: Import

    /// What an import did.
    public struct Imported: Hashable, Sendable {
        public var added: Int
        /// Credential IDs already in the store, skipped.
        public var skippedDuplicates: Int
        /// Credentials of other types (passwords, notes) in the file, skipped.
        public var otherTypes: Int
        /// The file held private keys in clear text: the person should delete it.
        public var wasClearText: Bool

        public init(added: Int, skippedDuplicates: Int, otherTypes: Int, wasClearText: Bool) {
            self.added = added
            self.skippedDuplicates = skippedDuplicates
            self.otherTypes = otherTypes
            self.wasClearText = wasClearText
        }
    }

    /// Imports the passkeys of `file` (opened with the importer key at `key`, or the archive passphrase) after
    /// showing them and asking (`yes`: without asking, reported).
    public func `import`(file: String, key: String?, yes: Bool) async throws(ProviderError) -> Imported {
        let contents = try await read(file, key: key)
        let store = try await access.open(create: false)
        defer { store.close() }
        var entries: [ImportPreview.Entry] = []
        for passkey in contents.passkeys {
            let credential = passkey.credential
            let duplicate: Bool
            do {
                duplicate = try store.entry(id: credential.id) != nil
            } catch {
                throw ProviderError(error.message)
            }
            entries.append(
                ImportPreview.Entry(
                    relyingPartyID: credential.relyingPartyID, userName: credential.userName,
                    created: credential.creationDate, duplicate: duplicate, notes: passkey.notes))
        }
        interface.report(
            .importing(
                ImportPreview(
                    file: file, source: contents.source, entries: entries, skippedTypes: contents.skippedTypes)))
        let fresh = entries.filter { !$0.duplicate }.count
        if fresh > 0 {
            let question = ProviderQuestion.importPasskeys(count: fresh, store: store.url.path)
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
            outcome = try store.importCredentials(contents.passkeys.map(\.credential), notes: notes)
        } catch {
            throw ProviderError(error.message)
        }
        return Imported(
            added: outcome.added.count, skippedDuplicates: outcome.skippedDuplicates.count,
            otherTypes: contents.skippedTypes.values.reduce(0, +), wasClearText: contents.wasClearText)
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
    /// Credentials of other types, by type, skipped.
    public var skippedTypes: [String: Int]
}
