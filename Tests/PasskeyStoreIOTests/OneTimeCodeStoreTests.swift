import Basics
import CTAP2
import Crypto
import Foundation
import PasskeyStoreIO
import Testing

/// One-time-code secrets (schema version 6): sealed like passwords, bound to their row, never in the file in clear
/// text; imported with passwords in the import's one transaction; and a version 5 store upgraded without a row
/// rewritten.
struct OneTimeCodeStoreTests {
    static let secret = Array("12345678901234567890".utf8)

    /// What turns a new store back into a version 5 one: the reverse of `SQL.version6`. (When version 6 gains more
    /// statements, their undoing goes here too, for example `ALTER TABLE credentials DROP COLUMN …`.)
    static let version6Undo = [
        "DROP TABLE one_time_codes", "ALTER TABLE credentials DROP COLUMN hidden_ms",
        "ALTER TABLE passwords DROP COLUMN filled_ms",
    ]

    static func service(_ text: String) throws -> PasswordService { try #require(PasswordService(text)) }

    @Test func addListCodeAndDeleteAndTheFileNeverHoldsTheSecret() async throws {
        let scratch = try Scratch()
        let store = try scratch.makeStore()
        let site = try Self.service("example.com")
        let parameters = OneTimeCode.Parameters(algorithm: .sha1, digits: 8, period: 30)
        #expect(
            try store.addOneTimeCode(
                secret: Self.secret, service: site, userName: "alice", issuer: "Example", parameters: parameters)
                == .added)
        // A login keeps the code it has.
        #expect(
            try store.addOneTimeCode(
                secret: [9, 9, 9], service: site, userName: "alice", issuer: nil, parameters: .init())
                == .alreadyPresent)
        let codes = try store.oneTimeCodes(service: site)
        let code = try #require(codes.first)
        #expect(codes.count == 1 && code.secret == Self.secret && code.saved.issuer == "Example")
        #expect(code.saved.parameters == parameters)
        // RFC 6238's first vector, through the stored secret.
        #expect(code.code(at: Date(timeIntervalSince1970: 59)) == ("94287082", 1))
        #expect(!"\(code)".contains("1234") && !String(reflecting: code).contains("1234"))
        store.close()

        let bytes = try Data(contentsOf: scratch.url())
        #expect(bytes.range(of: Data(Self.secret)) == nil)
        #expect(bytes.range(of: Data(Self.secret.base32EncodedString.utf8)) == nil)

        let reopened = try SQLiteCredentialStore.open(at: scratch.url(), passphrase: "correct horse")
        #expect(try reopened.oneTimeCodes().map(\.saved.userName) == ["alice"])
        #expect(try reopened.deleteOneTimeCode(service: site, userName: "alice"))
        #expect(try !reopened.deleteOneTimeCode(service: site, userName: "alice"))
        #expect(try reopened.oneTimeCodes().isEmpty)
    }

    @Test func outOfRangeCodesAreRefusedAndNothingIsWritten() throws {
        let scratch = try Scratch()
        let store = try scratch.makeStore()
        let site = try Self.service("example.com")
        for (secret, parameters) in [
            ([UInt8](), OneTimeCode.Parameters()), (Self.secret, .init(digits: 9)), (Self.secret, .init(digits: 5)),
            (Self.secret, .init(period: 0)), ([UInt8](repeating: 1, count: 1025), .init()),
        ] {
            expectStoreError(.io) {
                try store.addOneTimeCode(
                    secret: secret, service: site, userName: "a", issuer: nil, parameters: parameters)
            }
        }
        #expect(try store.oneTimeCodeEntries().isEmpty)
    }

    /// Any column changed outside this program, or a seal moved to another row, makes the row damaged.
    @Test(arguments: [
        "UPDATE one_time_codes SET user_name = 'mallory' WHERE user_name = 'alice'",
        "UPDATE one_time_codes SET digits = 6 WHERE user_name = 'alice'",
        "UPDATE one_time_codes SET algorithm = 'SHA256' WHERE user_name = 'alice'",
        "UPDATE one_time_codes SET period = 60 WHERE user_name = 'alice'",
        "UPDATE one_time_codes SET issuer = NULL WHERE user_name = 'alice'",
        "UPDATE one_time_codes SET service = 'evil.example' WHERE user_name = 'alice'",
        "UPDATE one_time_codes SET sealed_secret = (SELECT sealed_secret FROM one_time_codes WHERE user_name = 'bob') "
            + "WHERE user_name = 'alice'",
    ])
    func aChangedRowIsDamaged(statement: String) async throws {
        let scratch = try Scratch()
        let store = try scratch.makeStore()
        let site = try Self.service("example.com")
        try store.addOneTimeCode(
            secret: Self.secret, service: site, userName: "alice", issuer: "Example",
            parameters: .init(algorithm: .sha1, digits: 8, period: 30))
        try store.addOneTimeCode(secret: [1, 2, 3], service: site, userName: "bob", issuer: nil, parameters: .init())
        store.close()
        try await execute(statement, on: scratch.url())
        let reopened = try SQLiteCredentialStore.open(at: scratch.url(), passphrase: "correct horse")
        let damaged = try reopened.oneTimeCodeEntries().compactMap { entry -> DamagedLogin? in
            if case .damaged(let damaged) = entry { return damaged }
            return nil
        }
        #expect(damaged.count == 1 && damaged.first?.reason == .failsIntegrityCheck)
        #expect(try reopened.oneTimeCodes().map(\.saved.userName) == ["bob"])
    }

    /// An import adds passkeys, passwords (with their notes) and codes in one transaction; a login already in the
    /// store keeps its password and code, and is counted.
    @Test func anImportAddsPasswordsAndCodesAndCountsLoginsAlreadyPresent() throws {
        let scratch = try Scratch()
        let store = try scratch.makeStore()
        let site = try Self.service("example.com")
        try store.savePassword("old one", userName: "alice", service: site)
        let date = Date(timeIntervalSince1970: 1_600_000_000)
        let outcome = try store.importCredentials(
            [makeCredential()],
            passwords: [
                PasswordImport(service: site, userName: "alice", password: "new one", note: "x", creationDate: date),
                PasswordImport(
                    service: site, userName: "bob", password: "bob's", note: "bob's note", creationDate: date),
            ],
            oneTimeCodes: [
                OneTimeCodeImport(
                    service: site, userName: "bob", issuer: "Example", parameters: .init(), secret: Self.secret,
                    creationDate: date)
            ])
        #expect(outcome.added.count == 1 && outcome.passwordsAdded == 1 && outcome.passwordsAlreadyPresent == 1)
        #expect(outcome.oneTimeCodesAdded == 1 && outcome.oneTimeCodesAlreadyPresent == 0)
        let passwords = try store.passwords(service: site)
        #expect(passwords.first { $0.login.userName == "alice" }?.password == "old one")
        let bob = try #require(passwords.first { $0.login.userName == "bob" })
        #expect(bob.password == "bob's" && bob.login.creationDate == date)
        #expect(try store.note(of: .password(id: bob.login.id)) == .text("bob's note"))
        #expect(try store.oneTimeCodes().map(\.secret) == [Self.secret])

        // Again: everything is there already.
        let again = try store.importCredentials(
            [],
            oneTimeCodes: [
                OneTimeCodeImport(
                    service: site, userName: "bob", issuer: nil, parameters: .init(), secret: [1], creationDate: date)
            ])
        #expect(again.oneTimeCodesAdded == 0 && again.oneTimeCodesAlreadyPresent == 1)
        #expect(try store.oneTimeCodes().map(\.secret) == [Self.secret])
    }

    /// A version 5 store (made here as a new store without the version 6 table and with user_version 5) is upgraded
    /// in place when opened: the table is added and no existing row is rewritten.
    @Test func aVersionFiveStoreUpgradesWithNoRowRewritten() async throws {
        let scratch = try Scratch()
        let store = try scratch.makeStore()
        let credential = makeCredential()
        try store.save(credential)
        _ = try store.setNote("a passkey note", of: .passkey(credentialID: credential.id))
        try store.savePassword("hunter2", userName: "alice", service: try Self.service("example.com"))
        store.close()
        // Undo what version 6 added (every statement of `SQL.version6`, in reverse), then say version 5.
        for statement in Self.version6Undo + ["PRAGMA user_version = 5"] {
            try await execute(statement, on: scratch.url())
        }
        #expect(try await SettingsAndMigrationTests.userVersion(scratch.url()) == "5")
        // Each table's version 5 columns, hashed row by row: the same after the upgrade means no row was rewritten.
        let dump = """
            import sqlite3, sys, hashlib, json
            db = sqlite3.connect(sys.argv[1])
            columns = json.loads(sys.argv[2]) if len(sys.argv) > 2 else {
                table: [row[1] for row in db.execute(f"PRAGMA table_info({table})")]
                for table in ("meta", "credentials", "passwords", "authenticator_settings")}
            hashes = {table: hashlib.sha256(repr(db.execute(
                f"SELECT {', '.join(names)} FROM {table} ORDER BY rowid").fetchall()).encode()).hexdigest()
                for table, names in columns.items()}
            print(json.dumps({"columns": columns, "hashes": hashes}))
            """
        let before =
            try JSONSerialization.jsonObject(with: Data(try await python(dump, scratch.url().path).utf8))
            as? [String: Any]
        let columns = try JSONSerialization.data(withJSONObject: try #require(before?["columns"]))

        let upgraded = try SQLiteCredentialStore.open(at: scratch.url(), passphrase: "correct horse")
        #expect(
            try await SettingsAndMigrationTests.userVersion(scratch.url()) == "\(SQLiteCredentialStore.schemaVersion)")
        let after =
            try JSONSerialization.jsonObject(
                with: Data(try await python(dump, scratch.url().path, String(decoding: columns, as: UTF8.self)).utf8))
            as? [String: Any]
        let hashesBefore = try #require(before?["hashes"] as? [String: String])
        #expect(hashesBefore.count == 4 && after?["hashes"] as? [String: String] == hashesBefore)
        #expect(try upgraded.allCredentials().map(\.id) == [credential.id])
        #expect(try upgraded.passwords().map(\.password) == ["hunter2"])
        #expect(try upgraded.note(of: .passkey(credentialID: credential.id)) == .text("a passkey note"))
        #expect(try upgraded.oneTimeCodes().isEmpty)
        #expect(
            try upgraded.addOneTimeCode(
                secret: Self.secret, service: try Self.service("example.com"), userName: "alice", issuer: nil,
                parameters: .init()) == .added)
    }
}
