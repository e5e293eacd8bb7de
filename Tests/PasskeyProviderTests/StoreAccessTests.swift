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
        let mismatched = ScriptedPerson([.type("one"), .type("two")])
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

    @Test func theEnvironmentsPassphraseIsUsedWithoutAsking() async throws {
        let directory = try TemporaryDirectory()
        let person = ScriptedPerson()
        let environment = ["PASSKEY_PASSPHRASE": "from env"]
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
        let environment = ["PASSKEY_PASSPHRASE": "pw"]
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

    @Test func asecondServerIsRefusedWhileTheFirstHoldsTheLock() async throws {
        let directory = try TemporaryDirectory()
        let environment = ["PASSKEY_PASSPHRASE": "pw"]
        let person = ScriptedPerson()
        let (lock, store) = try await Self.access(directory, person, environment: environment)
            .openForServing(create: true)
        // flock(2) locks belong to the open file description, so a second description in this process conflicts too.
        let error = await #expect(throws: ProviderError.self) {
            _ = try await Self.access(directory, person, environment: environment).openForServing(create: false)
        }
        #expect(error?.message.contains("is in use by another passkey process") == true)
        store.close()
        withExtendedLifetime(lock) {}
    }
}
