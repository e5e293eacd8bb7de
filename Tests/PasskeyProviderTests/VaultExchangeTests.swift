import Basics
import CTAP2
import Crypto
import Foundation
import PasskeyFilesIO
import PasskeyProvider
import PasskeyStoreIO
import TestSupport
import Testing

/// `ExchangeService` in process: export sealed to an importer key, never in clear text and never over a file; import
/// shown, asked, all or nothing; importer keys. Stores in a temporary directory, a scripted person.
struct VaultExchangeTests {
    static let passphrase = "correct horse"

    struct World {
        let directory: TemporaryDirectory

        init() throws { directory = try TemporaryDirectory() }

        func path(_ name: String) -> String { directory.url(name).path }

        /// A new store at `name` holding passkeys for `users` at example.com.
        @discardableResult
        func store(_ name: String, users: [String] = [], passwords: Int = 0) throws -> String {
            let store = try SQLiteCredentialStore.create(
                at: directory.url(name), passphrase: VaultExchangeTests.passphrase, kdf: .testing)
            defer { store.close() }
            for number in 0..<passwords {
                try store.savePassword(
                    "a saved password \(number)", userName: "user\(number)", service: PasswordService("example.com")!)
            }
            for user in users {
                try store.save(
                    StoredCredential(
                        id: Array(user.utf8) + [UInt8](repeating: 7, count: 12), relyingPartyID: "example.com",
                        relyingPartyName: "Example", userHandle: Array(user.utf8), userName: user,
                        userDisplayName: user.capitalized, privateKey: P256.Signing.PrivateKey(), isDiscoverable: true,
                        backupEligible: true, backupState: true,
                        creationDate: Date(timeIntervalSince1970: 1_700_000_000)))
            }
            return path(name)
        }

        func service(
            _ store: String, _ person: ScriptedPerson, canAsk: Bool = true, environment: [String: String] = [:]
        ) -> ExchangeService {
            var environment = environment
            environment["PASSKEY_PASSPHRASE"] = VaultExchangeTests.passphrase
            return ExchangeService(
                access: StoreAccess(
                    files: PasskeyFiles(store: URL(fileURLWithPath: store)), interface: person,
                    environment: environment, canAsk: canAsk))
        }

        /// The user names in the store at `path`.
        func users(_ path: String) throws -> [String] {
            let store = try SQLiteCredentialStore.open(
                at: URL(fileURLWithPath: path), passphrase: VaultExchangeTests.passphrase)
            defer { store.close() }
            return try store.allCredentials().compactMap(\.userName).sorted()
        }

        func bytes(_ path: String) -> [UInt8] { Array(FileManager.default.contents(atPath: path) ?? Data()) }
    }

    static func mode(_ path: String) throws -> Int {
        try (FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) ?? -1
    }

    @Test func anExportIsSealedToTheImporterKeyNeverReplacesAFileAndImportsAfterAYes() async throws {
        let world = try World()
        let source = try world.store("source.sqlite", users: ["alice", "bob"], passwords: 1)
        let keyPath = world.path("importer.jwk")
        let fingerprint = try ExchangeService.newImporterKey(output: keyPath)
        let publicPath = ExchangeService.publicKeyPath(for: keyPath)
        #expect(publicPath == world.path("importer.pub.jwk"))
        #expect(try Self.mode(keyPath) == 0o600 && Self.mode(publicPath) == 0o644)
        #expect(fingerprint.split(separator: ":").count == 8)
        // Neither key file is ever replaced.
        let before = world.bytes(keyPath)
        #expect(throws: ProviderError("\(keyPath) already exists; not replacing it")) {
            try ExchangeService.newImporterKey(output: keyPath)
        }
        #expect(world.bytes(keyPath) == before)

        let output = world.path("export.json")
        let exported = try await world.service(source, ScriptedPerson()).export(
            sealing: .importerKey(path: publicPath), output: output)
        #expect(exported.count == 2 && exported.singleDevice == 0 && exported.bytes == nil)
        // Issue 27: the saved password goes with the passkeys (issue 24: it used to stay behind).
        #expect(exported.passwordsLeftOut == 0 && exported.passwords == 1 && exported.oneTimeCodes == 0)
        #expect(!String(decoding: world.bytes(output), as: UTF8.self).contains("a saved password"))
        #expect(exported.sealedWith == .importerKey(fingerprint: fingerprint))
        #expect(try Self.mode(output) == 0o600)
        let text = String(decoding: world.bytes(output), as: UTF8.self)
        #expect(!text.contains("alice") && !text.contains("example.com"))
        let sealed = world.bytes(output)
        await #expect(throws: ProviderError("\(output) already exists; not replacing it")) {
            _ = try await world.service(source, ScriptedPerson()).export(
                sealing: .importerKey(path: publicPath), output: output)
        }
        #expect(world.bytes(output) == sealed)
        // A private key is not an importer's public key: nothing is written.
        let refused = await #expect(throws: ProviderError.self) {
            _ = try await world.service(source, ScriptedPerson()).export(
                sealing: .importerKey(path: keyPath), output: world.path("x.json"))
        }
        #expect(refused?.message.contains("this is a private key") == true)
        #expect(refused?.exitStatus == 1)
        #expect(!FileManager.default.fileExists(atPath: world.path("x.json")))

        let target = try world.store("target.sqlite")
        let refusing = ScriptedPerson([.no])
        await #expect(throws: ProviderError("nothing was imported", exitStatus: ExitStatus.declined)) {
            _ = try await world.service(target, refusing).import(file: output, key: keyPath, yes: false)
        }
        #expect(refusing.prompts == [.confirm(.importPasskeys(count: 2, passwords: 1, store: target))])
        guard case .importing(let preview)? = refusing.events.first else {
            Issue.record("no preview: \(refusing.events)")
            return
        }
        // In the archive's order, which is the store's (credential IDs are random).
        #expect(preview.entries.compactMap(\.userName).sorted() == ["alice", "bob"])
        #expect(preview.entries.allSatisfy { !$0.duplicate })
        #expect(try world.users(target).isEmpty)

        let agreeing = ScriptedPerson([.yes])
        let imported = try await world.service(target, agreeing).import(file: output, key: keyPath, yes: false)
        #expect(
            imported
                == ExchangeService.Imported(
                    added: 2, skippedDuplicates: 0, otherTypes: 0, wasClearText: false, passwordsAdded: 1))
        #expect(try world.users(target) == ["alice", "bob"])

        // Again: both are there, so nothing is asked and both are counted.
        let again = ScriptedPerson()
        let skipped = try await world.service(target, again).import(file: output, key: keyPath, yes: false)
        #expect(skipped.added == 0 && skipped.skippedDuplicates == 2 && again.prompts.isEmpty)
    }

    /// `passkey note`'s notes go out with their passkeys and come back in: through a passphrase archive here.
    @Test func notesGoOutAndComeBackWithTheirPasskeys() async throws {
        let world = try World()
        let source = try world.store("source.sqlite", users: ["alice", "bob"])
        let alice = Array("alice".utf8) + [UInt8](repeating: 7, count: 12)
        let person = ScriptedPerson()
        let catalog = PasskeyCatalog(
            access: StoreAccess(
                files: PasskeyFiles(store: URL(fileURLWithPath: source)), interface: person,
                environment: ["PASSKEY_PASSPHRASE": Self.passphrase], canAsk: true))
        _ = try await catalog.setNote("where: the red folder\n", candidates: [alice], text: "alice")
        #expect(try await catalog.note(candidates: [alice], text: "alice").note == .text("where: the red folder"))

        let environment = ["PASSKEY_EXPORT_PASSPHRASE": "an archive passphrase"]
        let output = world.path("archive.json")
        _ = try await world.service(source, ScriptedPerson(), environment: environment).export(
            sealing: .passphrase, output: output)
        let target = try world.store("target.sqlite")
        _ = try await world.service(target, ScriptedPerson(), environment: environment).import(
            file: output, key: nil, yes: true)
        let store = try SQLiteCredentialStore.open(at: URL(fileURLWithPath: target), passphrase: Self.passphrase)
        defer { store.close() }
        #expect(try store.notes() == [alice: .text("where: the red folder")])
    }

    /// Issue 27: an export carries passkeys, saved passwords (with their notes) and one-time codes, and the other
    /// store imports all three; a second import counts each as already present.
    @Test func passwordsNotesAndOneTimeCodesGoOutAndComeBack() async throws {
        let world = try World()
        let source = try world.store("source.sqlite", users: ["alice"])
        let site = try #require(PasswordService("example.com"))
        let origin = try #require(PasswordService("https://example.org:8443"))
        do {
            let store = try SQLiteCredentialStore.open(at: URL(fileURLWithPath: source), passphrase: Self.passphrase)
            defer { store.close() }
            try store.savePassword("alice's password", userName: "alice", service: site)
            try store.savePassword("carol's password", userName: "carol", service: origin)
            let alice = try #require(try store.passwords(service: site).first)
            _ = try store.setNote("recovery codes: red folder", of: .password(id: alice.login.id))
            try store.addOneTimeCode(
                secret: Array("12345678901234567890".utf8), service: site, userName: "alice", issuer: "Example",
                parameters: .init(algorithm: .sha256, digits: 8, period: 60))
            try store.addOneTimeCode(
                secret: [1, 2, 3, 4, 5], service: try #require(PasswordService("other.example")), userName: "dave",
                issuer: nil, parameters: .init())
        }
        let environment = ["PASSKEY_EXPORT_PASSPHRASE": "an archive passphrase"]
        let output = world.path("archive.json")
        let exported = try await world.service(source, ScriptedPerson(), environment: environment).export(
            sealing: .passphrase, output: output)
        #expect(exported.count == 1 && exported.passwords == 2 && exported.oneTimeCodes == 2)
        let target = try world.store("target.sqlite")
        let person = ScriptedPerson()
        let imported = try await world.service(target, person, environment: environment).import(
            file: output, key: nil, yes: true)
        #expect(imported.added == 1 && imported.passwordsAdded == 2 && imported.oneTimeCodesAdded == 2)
        #expect(imported.otherTypes == 0)
        guard
            case .importing(let preview)? = person.events.first(where: {
                if case .importing = $0 { true } else { false }
            })
        else {
            Issue.record("no preview: \(person.events)")
            return
        }
        #expect(preview.passwords.map(\.service).sorted() == ["example.com", "https://example.org:8443"])
        #expect(preview.oneTimeCodes.map(\.userName).sorted() == ["alice", "dave"])
        let store = try SQLiteCredentialStore.open(at: URL(fileURLWithPath: target), passphrase: Self.passphrase)
        defer { store.close() }
        let alice = try #require(try store.passwords(service: site).first)
        #expect(alice.password == "alice's password" && alice.login.userName == "alice")
        #expect(try store.note(of: .password(id: alice.login.id)) == .text("recovery codes: red folder"))
        #expect(try store.passwords(service: origin).map(\.password) == ["carol's password"])
        let codes = try store.oneTimeCodes()
        #expect(codes.map(\.saved.service.text) == ["example.com", "other.example"])
        #expect(codes[0].secret == Array("12345678901234567890".utf8) && codes[0].saved.issuer == "Example")
        #expect(codes[0].saved.parameters == .init(algorithm: .sha256, digits: 8, period: 60))

        let again = try await world.service(target, ScriptedPerson(), environment: environment).import(
            file: output, key: nil, yes: true)
        #expect(again.added == 0 && again.passwordsAlreadyPresent == 2 && again.oneTimeCodesAlreadyPresent == 2)
    }

    /// Issue 27: a Bitwarden export keeps its passwords, notes and one-time codes (otpauth URIs and bare secrets);
    /// other item types and a login without a site are named as skipped.
    @Test func aBitwardenExportKeepsPasswordsAndOneTimeCodes() async throws {
        let world = try World()
        let key = Self.base64URL(P256.Signing.PrivateKey().derRepresentation)
        let json = """
            {"encrypted": false, "folders": [], "items": [\(Self.bitwarden(id: UUID().uuidString.lowercased(), key: key)),
            {"id": "1", "type": 1, "name": "Mail", "notes": "security questions: none", \
            "login": {"username": "erin", "password": "mail password", \
            "totp": "otpauth://totp/Mail:erin?secret=JBSWY3DPEHPK3PXP&issuer=Mail&digits=8", \
            "uris": [{"match": null, "uri": "https://mail.example/login"}]}},
            {"id": "2", "type": 1, "name": "Forum", "login": {"username": "erin", "password": "forum", \
            "totp": "JBSW Y3DP EHPK 3PXP", "uris": [{"uri": "forum.example"}]}},
            {"id": "3", "type": 1, "name": "Router", "login": {"username": "admin", "password": "x", "uris": []}},
            {"id": "5", "type": 1, "name": "Huge", "login": {"username": "h", "password": "\(String(repeating: "p", count: 4097))", \
            "uris": [{"uri": "huge.example"}]}},
            {"id": "4", "type": 3, "name": "Visa", "card": {}}]}
            """
        let path = world.path("bitwarden.json")
        _ = FileManager.default.createFile(atPath: path, contents: Data(json.utf8))
        let target = try world.store("target.sqlite")
        let person = ScriptedPerson()
        let imported = try await world.service(target, person).import(file: path, key: nil, yes: true)
        #expect(imported.added == 1 && imported.passwordsAdded == 2 && imported.oneTimeCodesAdded == 2)
        #expect(imported.otherTypes == 3 && imported.wasClearText)
        guard
            case .importing(let preview)? = person.events.first(where: {
                if case .importing = $0 { true } else { false }
            })
        else {
            Issue.record("no preview: \(person.events)")
            return
        }
        #expect(preview.skipped.map(\.title).sorted() == ["Huge", "Router", "Visa"])
        #expect(preview.skippedTypes == ["basic-auth": 2, "card": 1])
        #expect(preview.skipped.first { $0.title == "Huge" }?.reason.contains("over 4096 bytes") == true)
        let store = try SQLiteCredentialStore.open(at: URL(fileURLWithPath: target), passphrase: Self.passphrase)
        defer { store.close() }
        let mail = try #require(PasswordService("mail.example"))
        let password = try #require(try store.passwords(service: mail).first)
        #expect(password.password == "mail password" && password.login.userName == "erin")
        #expect(try store.note(of: .password(id: password.login.id)) == .text("security questions: none"))
        let codes = try store.oneTimeCodes()
        #expect(codes.map(\.saved.service.text) == ["forum.example", "mail.example"])
        #expect(codes.map(\.saved.parameters.digits) == [6, 8] && codes[1].saved.issuer == "Mail")
        #expect(codes.allSatisfy { $0.secret.base32EncodedString == "JBSWY3DPEHPK3PXP" })
    }

    @Test(arguments: [
        ("", "the note is empty"), (" \n\n", "the note is empty"),
        ("bell \u{07}", "the note holds a control or format character"),
        ("rtl \u{202E}", "the note holds a control or format character"),
        (String(repeating: "é", count: 5_001), "the note is 10002 bytes long; a note keeps at most 10000"),
    ])
    func badNotesAreRefusedInPlainWords(text: String, message: String) throws {
        let error = #expect(throws: ProviderError.self) { try NoteText.checked(text) }
        #expect(error?.message == message)
        #expect(try NoteText.checked("tabs\tand\nlines\n\n") == "tabs\tand\nlines")
    }

    @Test func refusedOrBadImportsLeaveTheStoreUnchanged() async throws {
        let world = try World()
        let source = try world.store("source.sqlite", users: ["alice"])
        let keyPath = world.path("importer.jwk")
        _ = try ExchangeService.newImporterKey(output: keyPath)
        let sealed = world.path("export.json")
        _ = try await world.service(source, ScriptedPerson()).export(
            sealing: .importerKey(path: ExchangeService.publicKeyPath(for: keyPath)), output: sealed)
        let target = try world.store("target.sqlite", users: ["carol"])
        let before = world.bytes(target)

        let nobody = ScriptedPerson()
        let unasked = await #expect(throws: ProviderError.self) {
            _ = try await world.service(target, nobody, canAsk: false).import(file: sealed, key: keyPath, yes: false)
        }
        #expect(unasked?.message == "the import needs your approval")
        #expect(unasked?.hint == "Run it in a terminal, or pass --yes.")

        let keyless = await #expect(throws: ProviderError.self) {
            _ = try await world.service(target, nobody).import(file: sealed, key: nil, yes: true)
        }
        #expect(keyless?.message == "\(sealed) is sealed to an importer key")

        let garbage = try world.directory.write(Array("{not json".utf8), to: "garbage.json")
        let unreadable = await #expect(throws: ProviderError.self) {
            _ = try await world.service(target, nobody).import(file: garbage, key: nil, yes: true)
        }
        #expect(unreadable?.message.hasPrefix("cannot import \(garbage): ") == true)

        // One bad entry among good ones: nothing at all.
        let good = Self.bitwarden(
            id: UUID().uuidString.lowercased(), key: Self.base64URL(P256.Signing.PrivateKey().derRepresentation))
        let bad = Self.bitwarden(id: UUID().uuidString.lowercased(), key: "not base64url!")
        let file = try world.directory.write(
            Array("{\"encrypted\": false, \"folders\": [], \"items\": [\(good), \(bad)]}".utf8), to: "bitwarden.json")
        let partly = await #expect(throws: ProviderError.self) {
            _ = try await world.service(target, nobody).import(file: file, key: nil, yes: true)
        }
        #expect(partly?.message == "cannot import \(file): 1 entry cannot be imported; nothing was imported")
        #expect(partly?.hint == "  items[1].login.fido2Credentials[0]: keyValue is not base64url")

        #expect(nobody.prompts.isEmpty)
        #expect(world.bytes(target) == before)
        #expect(try world.users(target) == ["carol"])
    }

    @Test func theArchivePassphraseIsAskedTwiceAndNothingIsWrittenWhenTheyDiffer() async throws {
        let world = try World()
        let source = try world.store("source.sqlite", users: ["alice"])
        let output = world.path("backup.json")
        let person = ScriptedPerson([.type("one"), .type("two")])
        await #expect(throws: ProviderError("the passphrases do not match; nothing was written")) {
            _ = try await world.service(source, person).export(sealing: .passphrase, output: output)
        }
        #expect(
            person.prompts == [
                .secret(.archivePassphrase(confirming: false)), .secret(.archivePassphrase(confirming: true)),
            ])
        #expect(!FileManager.default.fileExists(atPath: output))

        let nobody = ScriptedPerson()
        let unasked = await #expect(throws: ProviderError.self) {
            _ = try await world.service(source, nobody, canAsk: false).export(sealing: .passphrase, output: output)
        }
        #expect(unasked?.message == "the archive needs a passphrase")
        await #expect(throws: ProviderError("PASSKEY_EXPORT_PASSPHRASE is set but empty")) {
            _ = try await world.service(source, nobody, environment: ["PASSKEY_EXPORT_PASSPHRASE": ""]).export(
                sealing: .passphrase, output: output)
        }
        #expect(!FileManager.default.fileExists(atPath: output))

        // Only what was asked for, and nothing when that is nothing.
        let keyPath = world.path("importer.jwk")
        _ = try ExchangeService.newImporterKey(output: keyPath)
        await #expect(throws: ProviderError("no passkeys to export")) {
            _ = try await world.service(source, nobody).export(
                sealing: .importerKey(path: ExchangeService.publicKeyPath(for: keyPath)),
                relyingParties: ["other.example"],
                output: output)
        }
        #expect(!FileManager.default.fileExists(atPath: output))
    }

    /// A Bitwarden login item holding one passkey.
    static func bitwarden(id: String, key: String) -> String {
        """
        {"id": "\(UUID().uuidString.lowercased())", "type": 1, "name": "Example", "favorite": false, \
        "login": {"username": "dave", "password": null, "totp": null, \
        "uris": [{"match": null, "uri": "https://example.com"}], "fido2Credentials": [{"credentialId": "\(id)", \
        "keyType": "public-key", "keyAlgorithm": "ECDSA", "keyCurve": "P-256", "keyValue": "\(key)", \
        "rpId": "example.com", "userHandle": "ZGF2ZQ", "userName": "dave", "counter": "0", "rpName": "Example", \
        "userDisplayName": "Dave", "discoverable": "true", "creationDate": "2024-03-05T10:11:12.345Z"}]}}
        """
    }

    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
