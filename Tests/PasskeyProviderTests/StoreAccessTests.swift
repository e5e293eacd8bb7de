import CTAP2
import Foundation
import PasskeyFilesIO
import PasskeyProvider
import PasskeyStoreIO
import TestSupport
import Testing

/// `StoreAccess`: where the passphrase comes from, what is created when, and the serving lock.
struct StoreAccessTests {
    static func access(
        _ directory: TemporaryDirectory, _ person: ScriptedPerson, environment: [String: String] = [:],
        canAsk: Bool = true
    ) -> StoreAccess {
        StoreAccess(
            files: PasskeyFiles(store: directory.url("passkeys.sqlite")), interface: person, environment: environment,
            canAsk: canAsk)
    }

    @Test func aMissingStoreIsAnErrorThatSaysHowToMakeOne() async throws {
        let directory = try TemporaryDirectory()
        let person = ScriptedPerson()
        let error = await #expect(throws: ProviderError.self) {
            _ = try await Self.access(directory, person).open(create: false)
        }
        #expect(error?.message == "no passkey store at \(directory.url("passkeys.sqlite").path)")
        #expect(error?.hint == "Create one with `passkey init`, or choose another with --store or PASSKEY_STORE.")
        #expect(person.prompts.isEmpty)
        #expect(directory.listing().isEmpty)
    }

    @Test func aNewStoreAsksTwiceAndIsCreatedOnlyWhenBothMatch() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.url("passkeys.sqlite").path
        let mismatched = ScriptedPerson([.type("one passphrase"), .type("two passphrase")])
        let error = await #expect(throws: ProviderError.self) {
            _ = try await Self.access(directory, mismatched).open(create: true)
        }
        #expect(error?.message == "the passphrases do not match; nothing was created")
        #expect(!FileManager.default.fileExists(atPath: path))

        let person = ScriptedPerson([.type("secret words"), .type("secret words")])
        let store = try await Self.access(directory, person).open(create: true)
        store.close()
        #expect(
            person.prompts == [
                .secret(.newStorePassphrase(path: path, confirming: false)),
                .secret(.newStorePassphrase(path: path, confirming: true)),
            ])
        guard case .storeCreated(let created)? = person.events.first else {
            Issue.record("no storeCreated event: \(person.events)")
            return
        }
        #expect(created == path)
        // It opens with that passphrase, asked once.
        let again = ScriptedPerson([.type("secret words")])
        try await Self.access(directory, again).open(create: false).close()
        #expect(again.prompts == [.secret(.storePassphrase(path: path))])
    }

    /// Issue 24: `init` took the passphrase `abc`. A new store's passphrase needs 12 characters and 4 different
    /// ones, typed or from PASSKEY_PASSPHRASE; nothing is made otherwise, unless the rule is waived (tests).
    @Test(arguments: [
        ("abc", "needs at least 12 characters (this one has 3)"), ("elevenchars", "(this one has 11)"),
        ("abababababababab", "needs at least 4 different characters"),
        ("pässwörd", "(this one has 8)"),
    ])
    func aNewStoresPassphraseFollowsTheRule(passphrase: String, problem: String) async throws {
        let directory = try TemporaryDirectory()
        let typed = ScriptedPerson([.type(passphrase), .type(passphrase)])
        let refused = await #expect(throws: ProviderError.self) {
            _ = try await Self.access(directory, typed).create()
        }
        #expect(refused?.message.contains(problem) == true, "\(refused?.message ?? "")")
        #expect(refused?.message.hasSuffix("; nothing was created") == true)
        #expect(typed.prompts.count == 1, "refused before it is asked again")
        let environment = ["PASSKEY_PASSPHRASE": passphrase]
        await #expect(throws: ProviderError.self) {
            _ = try await Self.access(directory, ScriptedPerson(), environment: environment).open(create: true)
        }
        #expect(directory.listing().isEmpty)
        // Waived, for tests: a flag (init --allow-weak-passphrase) or PASSKEY_ALLOW_WEAK_PASSPHRASE=1.
        try await StoreAccess(
            files: PasskeyFiles(store: directory.url("passkeys.sqlite")), interface: ScriptedPerson(),
            environment: environment.merging(["PASSKEY_ALLOW_WEAK_PASSPHRASE": "1"]) { $1 }, canAsk: false
        ).create().close()
        #expect(NewPassphraseRule.problem("four unrelated words") == nil)
    }

    @Test func theEnvironmentsPassphraseIsUsedWithoutAsking() async throws {
        let directory = try TemporaryDirectory()
        let person = ScriptedPerson()
        let environment = ["PASSKEY_PASSPHRASE": "from the environment"]
        try await Self.access(directory, person, environment: environment).open(create: true).close()
        try await Self.access(directory, person, environment: environment, canAsk: false).open(create: false).close()
        #expect(person.prompts.isEmpty)

        let empty = await #expect(throws: ProviderError.self) {
            _ = try await Self.access(directory, person, environment: ["PASSKEY_PASSPHRASE": ""]).open(create: false)
        }
        #expect(empty?.message == "PASSKEY_PASSPHRASE is set but empty")
    }

    @Test func withNobodyToAskTheErrorSaysWhatToDo() async throws {
        let directory = try TemporaryDirectory()
        let person = ScriptedPerson()
        let error = await #expect(throws: ProviderError.self) {
            _ = try await Self.access(directory, person, canAsk: false).open(create: true)
        }
        #expect(error?.message == "the passkey store needs a passphrase")
        #expect(error?.hint == "Set PASSKEY_PASSPHRASE, or run passkey in a terminal.")
        #expect(person.prompts.isEmpty)
        #expect(directory.listing().isEmpty)
    }

    @Test(arguments: [ScriptedPerson.Reply.endOfInput, .cancel, .timeOut, .type("")])
    func noPassphraseCreatesNothing(reply: ScriptedPerson.Reply) async throws {
        let directory = try TemporaryDirectory()
        let error = await #expect(throws: ProviderError.self) {
            _ = try await Self.access(directory, ScriptedPerson([reply])).open(create: true)
        }
        #expect(error?.message == "no passphrase given")
        #expect(directory.listing().isEmpty)
    }

    @Test func initRefusesToReplaceAStoreOrALinkInItsPlace() async throws {
        let directory = try TemporaryDirectory()
        let environment = ["PASSKEY_PASSPHRASE": "a test passphrase"]
        try await Self.access(directory, ScriptedPerson(), environment: environment).create().close()
        let error = await #expect(throws: ProviderError.self) {
            _ = try await Self.access(directory, ScriptedPerson(), environment: environment).create()
        }
        #expect(
            error?.message
                == "a passkey store already exists at \(directory.url("passkeys.sqlite").path); not replacing it")

        let other = try TemporaryDirectory()
        try FileManager.default.createSymbolicLink(
            atPath: other.url("passkeys.sqlite").path, withDestinationPath: "/nonexistent/target")
        await #expect(throws: ProviderError.self) {
            _ = try await Self.access(other, ScriptedPerson(), environment: environment).create()
        }
    }

    /// `passkey init` over a store: refused, the store byte for byte as it was and still opened by its first
    /// passphrase; with no passphrase and nobody to ask, nothing is made and the hint names PASSKEY_PASSPHRASE.
    @Test func initLeavesAStoreAsItWasAndMakesNothingWithoutAPassphrase() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.url("passkeys.sqlite").path
        let first = ["PASSKEY_PASSPHRASE": "a test passphrase"]
        try await Self.access(directory, ScriptedPerson(), environment: first).create().close()
        let before = Array(FileManager.default.contents(atPath: path) ?? Data())
        #expect(!before.isEmpty)
        let error = await #expect(throws: ProviderError.self) {
            _ = try await Self.access(
                directory, ScriptedPerson(), environment: ["PASSKEY_PASSPHRASE": "another passphrase"]
            ).create()
        }
        #expect(error?.message == "a passkey store already exists at \(path); not replacing it")
        #expect(error?.exitStatus == 1)
        #expect(Array(FileManager.default.contents(atPath: path) ?? Data()) == before)
        try await Self.access(directory, ScriptedPerson(), environment: first, canAsk: false).open(create: false)
            .close()

        let empty = try TemporaryDirectory()
        let person = ScriptedPerson()
        let unasked = await #expect(throws: ProviderError.self) {
            _ = try await Self.access(empty, person, canAsk: false).create()
        }
        #expect(unasked?.hint?.contains("PASSKEY_PASSPHRASE") == true)
        #expect(unasked?.exitStatus == 1)
        #expect(person.prompts.isEmpty)
        #expect(empty.listing().isEmpty)
    }

    /// A second server is refused naming the first one's process, `list` reads the store meanwhile, and once the
    /// first lets go the store serves again.
    @Test func theServingLockNamesItsHolderLeavesListingFreeAndGoesWithIt() async throws {
        let directory = try TemporaryDirectory()
        let environment = ["PASSKEY_PASSPHRASE": "a test passphrase"]
        let person = ScriptedPerson()
        var first: (StoreLock, SQLiteCredentialStore)? = try await Self.access(
            directory, person, environment: environment
        ).openForServing(create: true)
        // flock(2) locks belong to the open file description, so a second description in this process conflicts too.
        let error = await #expect(throws: ProviderError.self) {
            _ = try await Self.access(directory, person, environment: environment).openForServing(create: false)
        }
        let pid = ProcessInfo.processInfo.processIdentifier
        #expect(error?.message.contains("is in use by another passkey process (pid \(pid))") == true)
        #expect(error?.exitStatus == 1)
        // Reading needs no lock: `list` reads the index while the first one serves.
        let catalog = PasskeyCatalog(access: Self.access(directory, person, environment: environment))
        #expect(try await catalog.index().identities.isEmpty)

        first?.1.close()
        first = nil
        let (lock, store) = try await Self.access(directory, person, environment: environment)
            .openForServing(create: false)
        store.close()
        withExtendedLifetime(lock) {}
        #expect(person.prompts.isEmpty)
    }

    /// Every file of `directory` that holds data, by name: the lock file, SQLite's shared-memory file and an empty
    /// WAL (opening the store may leave one) hold none.
    static func contents(_ directory: TemporaryDirectory) -> [String: [UInt8]] {
        var contents: [String: [UInt8]] = [:]
        for name in directory.listing() where !name.hasSuffix(".lock") && !name.hasSuffix("-shm") {
            let bytes = Array(FileManager.default.contents(atPath: directory.file(name)) ?? Data())
            if name.hasSuffix("-wal") && bytes.isEmpty { continue }
            contents[name] = bytes
        }
        return contents
    }

    /// A wrong PASSKEY_PASSPHRASE where every `passkey password` command (add, delete, get, list --verify) opens the
    /// store: refused naming the passphrase, the saved password in no message, no file changed; the right passphrase
    /// still opens it with the password as it was.
    @Test func aWrongPassphraseOpensNothingAndChangesNoFile() async throws {
        let world = try TestStore()
        let service = try #require(PasswordService("example.com"))
        let secret = "uFA-T9C-aRD-cDP-secret"
        #expect(
            try await world.vault(ScriptedPerson()).add(service: service, user: "alice", password: .given(secret))
                == .added)
        world.store.close()
        let before = Self.contents(world.directory)
        #expect(before.keys.contains("passkeys.sqlite"))

        let person = ScriptedPerson()
        let wrong = ["PASSKEY_PASSPHRASE": "not the passphrase"]
        let error = await #expect(throws: ProviderError.self) {
            _ = try await Self.access(world.directory, person, environment: wrong, canAsk: false).open(create: false)
        }
        #expect(error?.message.contains("passphrase") == true)
        #expect(error?.exitStatus == 1)
        #expect(error.map { !$0.description.contains(secret) } == true)
        #expect(person.prompts.isEmpty)
        #expect(Self.contents(world.directory) == before)

        let right = ["PASSKEY_PASSPHRASE": TestStore.passphrase]
        let store = try await Self.access(world.directory, person, environment: right).open(create: false)
        defer { store.close() }
        let vault = PasswordVault(
            store: store, interface: person, mode: ApprovalMode(yes: false, environment: [:]), canAsk: false,
            environment: [:], approvalTable: PasskeyFiles(store: store.url).domainApprovals)
        #expect(try vault.get(service: service, user: nil) == secret)
    }
}

/// Three tries at the store's passphrase, and the typed one counting as the next ceremony's verification (issue 24:
/// one unlock per session).
struct PassphraseTriesAndOpeningVerificationTests {
    static func existingStore(_ directory: TemporaryDirectory) throws -> String {
        let url = directory.url("passkeys.sqlite")
        try SQLiteCredentialStore.create(at: url, passphrase: "right words", kdf: .testing).close()
        return url.path
    }

    static func triesLeft(_ person: ScriptedPerson) -> [Int] {
        person.events.compactMap { event -> Int? in
            if case .wrongPassphrase(let left) = event { left } else { nil }
        }
    }

    @Test func aWrongPassphraseIsAskedAgainAndTheTypedOneVerifiesOnce() async throws {
        let directory = try TemporaryDirectory()
        let path = try Self.existingStore(directory)
        let person = ScriptedPerson([.type("wrong"), .type("also wrong"), .type("right words")])
        let store = try await StoreAccessTests.access(directory, person).open(create: false)
        defer { store.close() }
        #expect(person.prompts == Array(repeating: .secret(.storePassphrase(path: path)), count: 3))
        #expect(Self.triesLeft(person) == [2, 1])
        let consent = ProviderConsent(
            interface: person, verifiedAtOpening: { OpeningVerification.take(for: store) },
            verifyPassphrase: { store.verifyPassphrase($0) })
        #expect(await consent.verify(selectedAccount: nil) == .approved(userVerified: true, selectedAccount: nil))
        #expect(person.prompts.count == 3)  // the ceremony did not ask
        // Once only: the next ceremony asks.
        #expect(!OpeningVerification.take(for: store))
    }

    @Test func theThirdWrongPassphraseFails() async throws {
        let directory = try TemporaryDirectory()
        _ = try Self.existingStore(directory)
        let person = ScriptedPerson([.type("a"), .type("b"), .type("c"), .type("right words")])
        let error = await #expect(throws: ProviderError.self) {
            _ = try await StoreAccessTests.access(directory, person).open(create: false)
        }
        #expect(error?.message == "the passphrase does not open the passkey store")
        #expect(error?.hint == nil)
        #expect(person.prompts.count == 3)
        #expect(person.unusedReplies == 1)
        #expect(Self.triesLeft(person) == [2, 1, 0])
    }

    @Test func aPassphraseFromTheEnvironmentIsNoVerificationAndIsNotRetried() async throws {
        let directory = try TemporaryDirectory()
        _ = try Self.existingStore(directory)
        let person = ScriptedPerson()
        let store = try await StoreAccessTests.access(
            directory, person, environment: ["PASSKEY_PASSPHRASE": "right words"]
        ).open(create: false)
        defer { store.close() }
        #expect(!OpeningVerification.take(for: store))
        await #expect(throws: ProviderError.self) {
            _ = try await StoreAccessTests.access(directory, person, environment: ["PASSKEY_PASSPHRASE": "wrong"])
                .open(create: false)
        }
        #expect(person.prompts.isEmpty && person.events.isEmpty)
    }

    @Test func theTypedPassphraseCountsOnlyWithinItsLifetime() async throws {
        let directory = try TemporaryDirectory()
        _ = try Self.existingStore(directory)
        let store = try SQLiteCredentialStore.open(at: directory.url("passkeys.sqlite"), passphrase: "right words")
        defer { store.close() }
        let typed = ContinuousClock.now
        OpeningVerification.grant(to: store, at: typed)
        #expect(!OpeningVerification.take(for: store, at: typed + OpeningVerification.lifetime + .seconds(1)))
        OpeningVerification.grant(to: store, at: typed)
        #expect(OpeningVerification.take(for: store, at: typed + OpeningVerification.lifetime))
    }
}
