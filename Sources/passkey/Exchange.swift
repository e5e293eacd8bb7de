import ArgumentParser
import Basics
import CTAP2
import Crypto
import CredentialExchange
import Foundation
import PasskeyStoreIO

#if canImport(Glibc)
    import Glibc
#endif

extension Passkey {
    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Export passkeys, sealed to an importer's key or under a passphrase.",
            discussion: """
                Writes the passkeys as a FIDO CXF document that never touches the disk in clear text: with --to, \
                sealed with HPKE to the importing side's public key (a CXP ExportResponse; make the key pair there \
                with `passkey import-key new`); with --passphrase, as a passphrase archive (scrypt and \
                AES-256-GCM) for backups, the passphrase from $PASSKEY_EXPORT_PASSPHRASE or asked twice. Passkeys \
                that are not backup eligible (BE = 0) are left out and counted. The file is written with mode \
                0600 and never replaces an existing one. See Docs/Exchange.md.
                """)

        @OptionGroup var store: StoreOptions
        @Option(help: ArgumentHelp("Seal to this importer's public key (a P-256 JWK file).", valueName: "file"))
        var to: String?
        @Flag(help: "Write a passphrase-protected archive instead.") var passphrase = false
        @Option(
            name: .customLong("rp"),
            help: ArgumentHelp("Only passkeys of this relying party ID (repeatable).", valueName: "rp-id"))
        var relyingParties: [String] = []
        @Option(
            name: .customLong("credential"),
            help: ArgumentHelp(
                "Only this passkey, by credential ID as `passkey list` shows it (repeatable).", valueName: "id"))
        var credentials: [String] = []
        @Option(
            name: .shortAndLong, help: ArgumentHelp("Write to this file (default: standard output).", valueName: "file")
        )
        var output: String?

        func validate() throws {
            guard (to != nil) != passphrase else { throw ValidationError("Give either --to FILE or --passphrase.") }
            for text in credentials where CredentialIDText(text) == nil {
                throw ValidationError("'\(text)' is not a base64url or hex credential ID.")
            }
        }

        func run() async throws {
            // Everything that can fail on the arguments comes before the store is unlocked.
            var importerKey: P256.KeyAgreement.PublicKey?
            if let to {
                let bytes = try ExchangeFiles.read(to, what: "the importer key")
                do throws(ExchangeError) {
                    importerKey = try P256.KeyAgreement.PublicKey(jwkRepresentation: bytes)
                } catch {
                    throw CommandFailure("\(to): \(error.message)")
                }
            }
            if let output, ExchangeFiles.exists(output) {
                throw CommandFailure("\(output) already exists; not replacing it")
            }
            let archivePassphrase = passphrase ? try await ExchangeFiles.archivePassphrase(confirm: true) : nil

            let store = try await store.open(create: false)
            defer { store.close() }
            var selected = try store.allCredentials()
            if !relyingParties.isEmpty { selected = selected.filter { relyingParties.contains($0.relyingPartyID) } }
            if !credentials.isEmpty {
                let ids = Set(credentials.flatMap { CredentialIDText($0)?.candidates ?? [] })
                selected = selected.filter { ids.contains($0.id) }
            }
            let (exported, singleDevice) = CXF.Header.exportable(selected)
            guard !exported.isEmpty else {
                throw CommandFailure(
                    "no passkeys to export"
                        + (singleDevice > 0 ? " (\(singleDevice) single-device passkeys may not leave this store)" : "")
                )
            }
            let document = CXF.Header(
                exporting: exported, exporterRpId: "passkey.local", exporterDisplayName: "passkey", at: Date())
            let bytes: [UInt8]
            let how: String
            do throws(ExchangeError) {
                if let importerKey {
                    bytes = try ExportResponse(sealing: document, to: importerKey).jsonBytes
                    how = "sealed to the importer key \(ExchangeFiles.fingerprint(importerKey))"
                } else {
                    let kdf = PassphraseArchive.KDF.default
                    bytes = try PassphraseArchive(sealing: document, passphrase: archivePassphrase ?? "", kdf: kdf)
                        .jsonBytes
                    how = "in a passphrase archive (\(kdf), \(kdf.memoryByteCount >> 20) MiB)"
                }
            } catch {
                throw CommandFailure("cannot export: \(error.message)")
            }
            if let output {
                try ExchangeFiles.writeNew(bytes, to: output)
            } else {
                FileHandle.standardOutput.write(Data(bytes + [0x0A]))
            }
            var line = "passkey: exported \(exported.count) passkey\(exported.count == 1 ? "" : "s") \(how)"
            if let output { line += " to \(output)" }
            if singleDevice > 0 { line += "; left out \(singleDevice) single-device (BE = 0)" }
            Terminal.shared.write(line + "\n")
        }
    }

    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Import passkeys from an export, an archive, Bitwarden or KeePassXC.",
            discussion: """
                Reads a `passkey export` file (with --key, the importer's private key), a passphrase archive \
                ($PASSKEY_EXPORT_PASSPHRASE or asked), a CXF document, a Bitwarden unencrypted JSON export or a \
                KeePassXC .passkey file. Every passkey is checked first (a P-256 key, sizes the store accepts); \
                one bad entry stops the import and nothing is written. Shows what it will add, asks, and adds them \
                in one transaction; credential IDs already in the store are skipped and counted. See \
                Docs/Exchange.md.
                """)

        @OptionGroup var store: StoreOptions
        @Argument(help: ArgumentHelp("The file to import.", valueName: "file")) var file: String
        @Option(help: ArgumentHelp("The importer's private key (JWK), for a sealed export.", valueName: "file"))
        var key: String?
        @Flag(help: "Add the passkeys without asking (scripts; the output says so).") var yes = false

        func run() async throws {
            let contents: ImportContents
            do {
                contents = try await read()
            } catch let error as ExchangeError {
                var hint: String?
                if !error.problems.isEmpty {
                    hint = error.problems.map { "  \($0.location): \($0.reason)" }.joined(separator: "\n")
                }
                throw CommandFailure("cannot import \(file): \(error.message)", hint: hint)
            }
            let store = try await store.open(create: false)
            defer { store.close() }
            let terminal = Terminal.shared
            let duplicates = try contents.passkeys.filter { try store.entry(id: $0.credential.id) != nil }.count
            let fresh = contents.passkeys.count - duplicates
            terminal.write("\(file.terminalSafe): \(contents.source) with \(contents.passkeys.count) passkeys\n")
            let dates = ISO8601DateFormatter()
            for passkey in contents.passkeys {
                let credential = passkey.credential
                var line =
                    "  \(credential.relyingPartyID.terminalSafe)  \((credential.userName ?? "no name").siteChosen)"
                line += "  created \(dates.string(from: credential.creationDate))"
                if try store.entry(id: credential.id) != nil { line += "  (already in the store: skipped)" }
                terminal.write(line + "\n")
                for note in passkey.notes { terminal.write("      note: \(note.terminalSafe)\n") }
            }
            for (type, count) in contents.skippedTypes.sorted(by: { $0.key < $1.key }) {
                terminal.write("  skipped \(count) credential\(count == 1 ? "" : "s") of type \(type.siteChosen)\n")
            }
            if fresh > 0 {
                let question = "Add \(fresh) passkey\(fresh == 1 ? "" : "s") to \(store.url.path)?"
                if yes {
                    terminal.write("passkey: auto-approved (--yes): \(question)\n")
                } else {
                    guard terminal.isInteractive else {
                        throw CommandFailure(
                            "the import needs your approval", hint: "Run it in a terminal, or pass --yes.")
                    }
                    terminal.write(question + " [y/N] ")
                    guard case .line(let answer) = await terminal.readLine(timeout: .seconds(300)),
                        ["y", "yes"].contains(answer.trimmingCharacters(in: .whitespaces).lowercased())
                    else { throw CommandFailure("nothing was imported") }
                }
            }
            let outcome = try store.importCredentials(contents.passkeys.map(\.credential))
            var summary = "Imported \(outcome.added.count) passkey\(outcome.added.count == 1 ? "" : "s")"
            if !outcome.skippedDuplicates.isEmpty {
                summary += "; skipped \(outcome.skippedDuplicates.count) already in the store"
            }
            let others = contents.skippedTypes.values.reduce(0, +)
            if others > 0 { summary += "; skipped \(others) credentials of other types" }
            print(summary + ".")
            if contents.wasClearText {
                terminal.write(
                    "passkey: \(file.terminalSafe) holds private keys in clear text: delete it now "
                        + "(for example `shred -u \(file.terminalSafe)`), and empty any trash or backup that has it.\n")
            }
        }

        /// The file's passkeys, opened with the key or passphrase it needs and checked.
        private func read() async throws -> ImportContents {
            let bytes = try ExchangeFiles.read(file, what: "the import file")
            switch try ImportFile(bytes: bytes, now: Date()) {
            case .clearText(let contents):
                return contents
            case .exportResponse(let response):
                guard let key else {
                    throw CommandFailure(
                        "\(file) is sealed to an importer key", hint: "Give its private key with --key FILE.")
                }
                let privateKey = try P256.KeyAgreement.PrivateKey(
                    jwkRepresentation: ExchangeFiles.read(key, what: "the key"))
                return try response.open(with: privateKey).importContents(
                    source: "export from \(response.exporter)", wasClearText: false)
            case .archive(let archive):
                let passphrase = try await ExchangeFiles.archivePassphrase(confirm: false)
                return try archive.open(passphrase: passphrase).importContents(
                    source: "passkey archive", wasClearText: false)
            }
        }
    }

    struct ImportKey: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "import-key",
            abstract: "Make the key pair an export is sealed to.",
            subcommands: [New.self])

        struct New: ParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Make a new importer key pair (P-256 JWK files).",
                discussion: """
                    Writes the private key to FILE (mode 0600: keep it, it opens every export sealed to it) and \
                    the public key to FILE with .pub.jwk, to give to the exporting side (`passkey export --to`). \
                    Neither file is replaced if it exists.
                    """)

            @Option(name: .shortAndLong, help: ArgumentHelp("The private key file.", valueName: "file"))
            var output = "importer.jwk"

            var publicPath: String {
                (output.hasSuffix(".jwk") ? String(output.dropLast(4)) : output) + ".pub.jwk"
            }

            func run() throws {
                for path in [output, publicPath] where ExchangeFiles.exists(path) {
                    throw CommandFailure("\(path) already exists; not replacing it")
                }
                let key = P256.KeyAgreement.PrivateKey(compactRepresentable: false)
                try ExchangeFiles.writeNew(key.jwkRepresentation, to: output)
                try ExchangeFiles.writeNew(key.publicKey.jwkRepresentation, to: publicPath, mode: 0o644)
                print("Wrote the private key to \(output) (mode 0600; keep it for `passkey import --key \(output)`).")
                print(
                    "Wrote the public key to \(publicPath): give it to the exporter (`passkey export --to \(publicPath)`)."
                )
                print("Fingerprint \(ExchangeFiles.fingerprint(key.publicKey))")
            }
        }
    }
}

/// Files and secrets for export and import.
enum ExchangeFiles {
    static func exists(_ path: String) -> Bool {
        var status = stat()
        return lstat(path, &status) == 0
    }

    /// Reads a file of at most `ImportFile.maximumBytes`.
    static func read(_ path: String, what: String) throws -> [UInt8] {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw CommandFailure("cannot read \(what) \(path)")
        }
        defer { try? handle.close() }
        let data = (try? handle.read(upToCount: ImportFile.maximumBytes + 1)) ?? Data()
        guard data.count <= ImportFile.maximumBytes else {
            throw CommandFailure(
                "\(path) is larger than \(ImportFile.maximumBytes >> 20) MiB; not a file passkey reads")
        }
        return Array(data)
    }

    /// Creates `path` (never replacing anything) with `mode` and writes `bytes` to disk.
    static func writeNew(_ bytes: [UInt8], to path: String, mode: mode_t = 0o600) throws {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard descriptor >= 0 else {
            throw CommandFailure("cannot create \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        _ = fchmod(descriptor, mode)
        let written = bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let count = write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if count <= 0 { return false }
                offset += count
            }
            return true
        }
        guard written, fsync(descriptor) == 0 else {
            unlink(path)
            throw CommandFailure("cannot write \(path): \(String(cString: strerror(errno)))")
        }
    }

    /// The archive passphrase: $PASSKEY_EXPORT_PASSPHRASE, or asked without echo (twice for a new archive).
    static func archivePassphrase(confirm: Bool) async throws -> String {
        if let value = ProcessInfo.processInfo.environment["PASSKEY_EXPORT_PASSPHRASE"] {
            guard !value.isEmpty else { throw CommandFailure("PASSKEY_EXPORT_PASSPHRASE is set but empty") }
            return value
        }
        let terminal = Terminal.shared
        guard terminal.isInteractive else {
            throw CommandFailure(
                "the archive needs a passphrase", hint: "Set PASSKEY_EXPORT_PASSPHRASE, or run passkey in a terminal.")
        }
        guard case .line(let first) = await terminal.readSecret(prompt: "Archive passphrase: ", timeout: .seconds(300)),
            !first.isEmpty
        else { throw CommandFailure("no passphrase given") }
        guard confirm else { return first }
        guard case .line(let second) = await terminal.readSecret(prompt: "Repeat it: ", timeout: .seconds(300)),
            second == first
        else { throw CommandFailure("the passphrases do not match; nothing was written") }
        return first
    }

    /// The first 8 bytes of SHA-256 of the key's uncompressed point, in hex: to compare keys by eye.
    static func fingerprint(_ key: P256.KeyAgreement.PublicKey) -> String {
        SHA256.hash(data: key.x963Representation).prefix(8).map { String(format: "%02x", $0) }.joined(separator: ":")
    }
}
