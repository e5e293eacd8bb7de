import CTAP2
import Foundation
import PasskeyProvider
import RelyingParty
import Synchronization
import TestSupport
import RelyingPartyTestSupport
import Testing
import WebAuthnClient
import WebRelyingParty

/// `client register` and `client sign-in` in process: the local relying party's options go to a real WebAuthn
/// engine whose only authenticator is this package's CTAP2 authenticator over an in-memory store, playing the
/// phone; the state file is a real one in a temporary directory.
struct ComputerRelyingPartyTests {
    /// A phone that approves everything, over one in-memory store, and how many engines were made for it.
    final class Phone: Sendable {
        let store = InMemoryCredentialStore()
        let engines = Mutex(0)

        func engine() -> ClientEngine {
            engines.withLock { $0 += 1 }
            let authenticator = Authenticator(
                configuration: .hybridPhone(oneRequestPerSession: false),
                environment: AuthenticatorEnvironment(store: store, userInteraction: UnattendedApproval()))
            return ClientEngine(
                environment: ClientEnvironment(
                    authenticators: [
                        InProcessAuthenticator(authenticator, kind: .hybrid, transports: [.hybrid], listing: nil)
                    ],
                    userInterface: FirstChoiceInterface(), relyingPartyIDChecker: HostRelyingPartyIDChecker()))
        }
    }

    /// A phone whose person says no.
    struct Refusing: UserInteraction {
        func requestConsent(_ request: ConsentRequest) async -> ConsentResult { .denied }
    }

    struct World {
        let directory: TemporaryDirectory
        let person = ScriptedPerson()
        let phone = Phone()
        let random = SeededBytes(seed: 11)

        init() throws { directory = try TemporaryDirectory() }

        var stateURL: URL { directory.url("rp-state.json") }

        var relyingParty: LocalRelyingParty {
            let random = random
            return LocalRelyingParty(
                relyingPartyID: "example.com", state: .file(stateURL), interface: person, random: { random($0) })
        }
    }

    @Test func registerKeepsThePublicKeyAndSignInUsesIt() async throws {
        let world = try World()
        let registered = try await world.relyingParty.register(
            user: "alice", displayName: "Alice", makeEngine: world.phone.engine)
        #expect(registered.userName == "alice")
        #expect(registered.userVerified)
        #expect(FileManager.default.fileExists(atPath: world.stateURL.path))
        #expect(world.person.computerEvents == [.verifiedByRelyingParty])

        let named = try await world.relyingParty.signIn(user: "alice", makeEngine: world.phone.engine)
        #expect(named.userName == "alice")
        #expect(named.credential.id == registered.credential.id)
        // Without --user the request has no allowCredentials: the phone picks the account.
        let picked = try await world.relyingParty.signIn(user: nil, makeEngine: world.phone.engine)
        #expect(picked.userName == "alice")
        #expect(world.person.computerEvents.count == 3)
    }

    /// The benchmarks' relying party: accounts in memory, shared by the copies of one storage, and no file anywhere.
    @Test func anInMemoryRelyingPartyKeepsItsAccountsWithoutAFile() async throws {
        let world = try World()
        let random = world.random
        let state = RelyingPartyStateStorage.memory()
        let relyingParty = LocalRelyingParty(relyingPartyID: "example.com", state: state, random: { random($0) })
        let registered = try await relyingParty.register(
            user: "alice", displayName: nil, makeEngine: world.phone.engine)
        #expect(try state.load().accounts(for: "example.com").map(\.userName) == ["alice"])
        let signedIn = try await relyingParty.signIn(user: nil, makeEngine: world.phone.engine)
        #expect(signedIn.credential.id == registered.credential.id)
        #expect(
            try state.load().accounts(for: "example.com").first?.credential.signCount == signedIn.credential.signCount)
        #expect(try FileManager.default.contentsOfDirectory(atPath: world.directory.url.path).isEmpty)
        await #expect(
            throws: ProviderError(
                "no passkey for example.com and bob in memory",
                hint: "Register one first with `passkey client register`.")
        ) {
            try await relyingParty.signIn(user: "bob", makeEngine: world.phone.engine)
        }
    }

    /// No passkey for the RP ID, or none for the user: the error says so before any phone is reached.
    @Test func signInWithoutARegisteredPasskeyFailsBeforeAnyPhone() async throws {
        let world = try World()
        let path = world.stateURL.path
        let hint = "Register one first with `passkey client register`."
        await #expect(throws: ProviderError("no passkey for example.com in \(path)", hint: hint)) {
            try await world.relyingParty.signIn(user: nil, makeEngine: world.phone.engine)
        }
        _ = try await world.relyingParty.register(user: "alice", displayName: nil, makeEngine: world.phone.engine)
        await #expect(throws: ProviderError("no passkey for example.com and bob in \(path)", hint: hint)) {
            try await world.relyingParty.signIn(user: "bob", makeEngine: world.phone.engine)
        }
        #expect(world.phone.engines.withLock { $0 } == 1)
    }

    /// A ceremony the phone refuses leaves the state file as it was.
    @Test func aFailedCeremonySavesNothing() async throws {
        let world = try World()
        let refusing = {
            let authenticator = Authenticator(
                configuration: .hybridPhone(oneRequestPerSession: false),
                environment: AuthenticatorEnvironment(
                    store: InMemoryCredentialStore(), userInteraction: Refusing()))
            return ClientEngine(
                environment: ClientEnvironment(
                    authenticators: [
                        InProcessAuthenticator(authenticator, kind: .hybrid, transports: [.hybrid], listing: nil)
                    ],
                    userInterface: FirstChoiceInterface(), relyingPartyIDChecker: HostRelyingPartyIDChecker()))
        }
        await #expect(throws: ClientError.self) {
            try await world.relyingParty.register(user: "alice", displayName: nil, makeEngine: refusing)
        }
        #expect(!FileManager.default.fileExists(atPath: world.stateURL.path))
        #expect(world.person.computerEvents.isEmpty)
    }
}
