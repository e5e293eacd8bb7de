import CBOR
import CTAP2
import Crypto
import Foundation
import Hybrid
import HybridDriver
import HybridTestSupport
import HybridIO
import PasskeyFilesIO
import PasskeyProvider
import PasskeyStoreIO
import Proximity
import TestSupport
import Testing

/// The phone role in process: a computer (`HybridClientLink`) and the phone (`PhoneService`) over an in-memory relay
/// and air, with a scripted person; no socket, no child process, no sleep.
struct PhoneServiceTests {
    static let relayURL = "ws://relay.test"
    static let timeouts = HybridTimeouts(all: .seconds(5))
    static let passphrase = "correct horse"

    /// The phone's world: a store, the air, the relay (tunnels and wake channel) and the person.
    struct World {
        let directory: TemporaryDirectory
        let store: SQLiteCredentialStore
        let air = FakeAir()
        let relay = FakeRelay()
        let wake: ScriptedListenerRelay
        let person: ScriptedPerson

        init(script: [ScriptedPerson.Reply], forgotten: Bool = false) throws {
            directory = try TemporaryDirectory()
            store = try SQLiteCredentialStore.create(
                at: directory.url("passkeys.sqlite"), passphrase: PhoneServiceTests.passphrase, kdf: .testing)
            wake = ScriptedListenerRelay(forgotten: forgotten)
            person = ScriptedPerson(script)
        }

        func environment(seed: UInt64) -> HybridEnvironment {
            let relay = relay
            let wake = wake
            let random = SeededBytes(seed: seed)
            return HybridEnvironment(
                openTunnel: { (url, _) async throws(TunnelError) -> any HybridTunnel in
                    if url.contains("/cable/listen") { return wake.open() }
                    return try relay.open(url)
                },
                randomBytes: { random($0) }, currentDate: { Date(timeIntervalSince1970: 1_800_000_000) },
                sleep: { _ in throw CancellationError() })
        }

        var service: PhoneService {
            PhoneService(
                store: store, interface: person,
                consent: ProviderConsent(
                    interface: person, verifyPassphrase: { [store] in store.verifyPassphrase($0) }),
                advertiser: air, radio: .simulated(host: "127.0.0.1", port: 1), environment: environment(seed: 99),
                timeouts: PhoneServiceTests.timeouts)
        }

        var links: PhoneLinks { PhoneLinks(store: store, interface: person, environment: environment(seed: 5)) }
    }

    /// Runs the computer's side of one QR session against `world`'s phone: connects (offering to store linking
    /// information when `offersLinking`), sends `request`, and returns the answer, the linking information the phone
    /// sent, and the phone's outcome.
    static func session(
        _ world: World, requestType: HybridRequestType, offersLinking: Bool = false,
        options: PhoneService.ScanOptions, request: [UInt8]
    ) async throws -> (answer: [UInt8], linking: LinkingInfo?, outcome: PhoneService.ScanOutcome) {
        let (qrCodes, sink) = AsyncStream.makeStream(of: String.self)
        let service = world.service
        let phone = Task { () throws -> PhoneService.ScanOutcome in
            var iterator = qrCodes.makeAsyncIterator()
            let url = try #require(await iterator.next())
            return try await service.answer(try QRCodePayload(url: url), options: options)
        }
        let computer = Task { () throws -> (answer: [UInt8], linking: LinkingInfo?) in
            let link = try await HybridClientLink.connect(
                requestType: requestType, scanner: world.air, tunnelServer: try TunnelServerBaseURL(string: relayURL),
                timeouts: timeouts, offersLinking: offersLinking, environment: world.environment(seed: 7),
                progress: { event in if case .showQRCode(let url) = event { sink.yield(url) } })
            let answer = try await link.request(request)
            let linking = link.linking
            await link.close()
            return (answer, linking)
        }
        // A phone that fails ends the computer's wait for its advert too.
        let outcome: PhoneService.ScanOutcome
        do {
            outcome = try await phone.value
        } catch {
            computer.cancel()
            throw error
        }
        let (answer, linking) = try await computer.value
        return (answer, linking, outcome)
    }

    static func makeCredential(user: String) -> [UInt8] {
        CTAPClient.makeCredentialMessage(
            clientDataHash: [UInt8](repeating: 1, count: 32), relyingPartyID: "example.com", relyingPartyName: nil,
            userHandle: Array(user.utf8), userName: user, userDisplayName: nil)
    }

    static var relayOptions: PhoneService.ScanOptions {
        get throws { PhoneService.ScanOptions(tunnelServer: try TunnelServerBaseURL(string: relayURL)) }
    }

    @Test func aPersonWhoApprovesAndVerifiesGetsAPasskeyMadeOnThePhone() async throws {
        let world = try World(script: [.yes, .type(Self.passphrase)])
        let (answer, linking, outcome) = try await Self.session(
            world, requestType: .makeCredential, options: try Self.relayOptions,
            request: Self.makeCredential(user: "alice"))
        #expect(answer.first == 0x00)
        #expect(linking == nil)
        #expect(outcome == PhoneService.ScanOutcome(answered: 1, linkID: nil))
        #expect(try world.store.allCredentials().map(\.userName) == ["alice"])
        #expect(
            world.person.prompts == [
                .confirm(
                    .authenticator(
                        .makeCredential(relyingPartyID: "example.com", userName: "alice", userDisplayName: nil))),
                .secret(.verification),
            ])
        let steps = world.person.phoneEvents.compactMap { event -> HybridAuthenticatorProgress? in
            if case .session(let step, _, false) = event { step } else { nil }
        }
        #expect(steps.count == 5)
        #expect(steps.suffix(3) == [.handshakeDone, .requestReceived(command: 1), .responseSent(status: 0)])
        guard case .done(1, false)? = world.person.phoneEvents.last else {
            Issue.record("the last event is not done(1): \(world.person.phoneEvents)")
            return
        }
        #expect(!world.air.isAdvertising)
        #expect(world.wake.connections == 0)
    }

    @Test func aDeclinedRequestIsRefusedAndNothingIsStored() async throws {
        let world = try World(script: [.no])
        let (answer, _, outcome) = try await Self.session(
            world, requestType: .makeCredential, options: try Self.relayOptions,
            request: Self.makeCredential(user: "alice"))
        #expect(answer == [CTAPError.operationDenied.rawValue])
        #expect(outcome.answered == 1)
        #expect(try world.store.allCredentials().isEmpty)
        #expect(world.person.unexpectedPrompts == 0)
    }

    @Test func aWrongPassphraseThreeTimesIsRefused() async throws {
        let world = try World(script: [.yes, .type("a"), .type("b"), .type("c")])
        let (answer, _, _) = try await Self.session(
            world, requestType: .makeCredential, options: try Self.relayOptions,
            request: Self.makeCredential(user: "alice"))
        #expect(answer.first != 0x00)
        #expect(try world.store.allCredentials().isEmpty)
        #expect(world.person.unusedReplies == 0)
    }

    @Test func linkingRegistersAContactSendsTheLinkAndKeepsIt() async throws {
        let world = try World(script: [.yes, .type(Self.passphrase)])
        var options = try Self.relayOptions
        options.linkName = "test phone"
        let (answer, linking, outcome) = try await Self.session(
            world, requestType: .makeCredential, offersLinking: true, options: options,
            request: Self.makeCredential(user: "alice"))
        #expect(answer.first == 0x00)
        let sent = try #require(linking)
        #expect(sent.name == "test phone")
        #expect(sent.contactID == ScriptedListenerRelay.contactID)
        #expect(outcome.linkID == sent.linkID)
        // The relay got exactly one registration.
        #expect(world.wake.received.count == 1)
        guard case .register? = world.wake.received.first else {
            Issue.record("the relay got \(world.wake.received)")
            return
        }
        let state = try #require(try world.links.state())
        #expect(state.contacts.map(\.relay) == [Self.relayURL])
        #expect(state.contacts.first?.contactID == ScriptedListenerRelay.contactID)
        #expect(state.links.map(\.linkID) == [sent.linkID])
        #expect(state.links.first?.secret == sent.linkSecret)
        #expect(state.links.first?.relay == Self.relayURL)
        // The phone's identity key is the one the computer was told about.
        #expect(
            state.identityPrivateKey.map { [UInt8]($0.publicKey.x963Representation) } == sent.authenticatorPublicKey)
        let events = world.person.phoneEvents
        #expect(events.contains { if case .registered(Self.relayURL) = $0 { true } else { false } })
        #expect(events.contains { if case .linked(Self.relayURL, sent.linkID) = $0 { true } else { false } })
        // The state is sealed under the store key, owner-only, beside the store.
        let file = PasskeyFiles(store: world.store.url).phoneLinks
        #expect(try OwnerOnlyFile.read(file, limit: 1 << 20) != nil)
    }

    @Test func aSecondLinkReusesTheContact() async throws {
        let world = try World(script: [.yes, .type(Self.passphrase), .yes, .type(Self.passphrase)])
        var options = try Self.relayOptions
        options.linkName = "phone"
        _ = try await Self.session(
            world, requestType: .makeCredential, offersLinking: true, options: options,
            request: Self.makeCredential(user: "alice"))
        _ = try await Self.session(
            world, requestType: .makeCredential, offersLinking: true, options: options,
            request: Self.makeCredential(user: "bob"))
        #expect(world.wake.connections == 1)
        let state = try #require(try world.links.state())
        #expect(state.contacts.count == 1)
        #expect(state.links.count == 2)
    }

    @Test func aComputerThatCannotStoreLinksIsNotLinked() async throws {
        let world = try World(script: [.yes, .type(Self.passphrase)])
        var options = try Self.relayOptions
        options.linkName = "phone"
        let (_, linking, outcome) = try await Self.session(
            world, requestType: .makeCredential, offersLinking: false, options: options,
            request: Self.makeCredential(user: "alice"))
        #expect(linking == nil)
        #expect(outcome.linkID == nil)
        #expect(world.wake.connections == 0)
        #expect(try world.links.state() == nil)
        #expect(world.person.phoneEvents.contains { if case .computerCannotLink = $0 { true } else { false } })
    }

    @Test func listeningWithoutALinkedComputerSaysHowToLinkOne() async throws {
        let world = try World(script: [])
        let error = await #expect(throws: ProviderError.self) { try await world.service.listen(relay: nil) }
        #expect(error?.message == "this phone has no linked computer")
        #expect(error?.hint == "Link one first: `passkey scan --link --relay URL …`.")
        #expect(world.wake.connections == 0)
    }

    /// A phone linked to one computer through the relay, by a real session.
    static func linkedWorld(forgotten: Bool) async throws -> World {
        let world = try World(script: [.yes, .type(Self.passphrase)], forgotten: false)
        var options = try Self.relayOptions
        options.linkName = "phone"
        _ = try await Self.session(
            world, requestType: .makeCredential, offersLinking: true, options: options,
            request: Self.makeCredential(user: "alice"))
        let linked = World(reusing: world, forgotten: forgotten)
        return linked
    }

    @Test func aRelayThatForgotThePhoneRemovesItsLinksAndSaysSo() async throws {
        let world = try await Self.linkedWorld(forgotten: true)
        let error = await #expect(throws: ProviderError.self) { try await world.service.listen(relay: nil) }
        #expect(error?.message == "the relay \(Self.relayURL) no longer knows this phone: its links there were removed")
        #expect(error?.hint == "Link the computers again with `passkey scan --link --relay \(Self.relayURL) …`.")
        let state = try #require(try world.links.state())
        #expect(state.contacts.isEmpty)
        #expect(state.links.isEmpty)
    }

    @Test func listeningProvesOwnershipAndStopsWhenCancelled() async throws {
        let world = try await Self.linkedWorld(forgotten: false)
        let service = world.service
        let listening = Task { try await service.listen(relay: nil) }
        // Wait until the relay has the proof; the listener then waits for wakes.
        for _ in 0..<10_000 where world.wake.received.isEmpty { await Task.yield() }
        let received = world.wake.received
        guard case .listen(let contactID, let proof)? = received.first else {
            Issue.record("the relay got \(received)")
            listening.cancel()
            return
        }
        #expect(contactID == ScriptedListenerRelay.contactID)
        let contact = try #require(try world.links.state()?.contacts.first)
        #expect(
            proof
                == ContactOwnership.proof(
                    verifier: ContactOwnership.verifier(listenerSecret: contact.listenerSecret),
                    challenge: [UInt8](repeating: 7, count: 32), contactID: contactID))
        listening.cancel()
        try await listening.value
        guard case .stopped? = world.person.phoneEvents.last else {
            Issue.record("the listener did not report stopping: \(world.person.phoneEvents)")
            return
        }
        // The links are untouched.
        #expect(try world.links.state()?.links.count == 1)
    }

    @Test func revokingTellsTheRelayAndRemovesTheContactAndItsLinks() async throws {
        let world = try await Self.linkedWorld(forgotten: false)
        let revocation = try await world.links.revoke(relay: nil)
        #expect(
            revocation == PhoneLinks.Revocation(relay: Self.relayURL, removedLinks: 1, relayHadForgotten: false))
        guard case .revoke(ScriptedListenerRelay.contactID, _)? = world.wake.received.last else {
            Issue.record("the relay got \(world.wake.received)")
            return
        }
        let state = try #require(try world.links.state())
        #expect(state.contacts.isEmpty && state.links.isEmpty)
    }

    @Test func revokingAtARelayThatForgotStillRemovesTheLinks() async throws {
        let world = try await Self.linkedWorld(forgotten: true)
        let revocation = try await world.links.revoke(relay: nil)
        #expect(revocation.relayHadForgotten)
        #expect(revocation.removedLinks == 1)
        #expect(try world.links.state()?.links.isEmpty == true)
    }

    @Test func removingOneLinkKeepsTheContact() async throws {
        let world = try await Self.linkedWorld(forgotten: false)
        let state = try #require(try world.links.state())
        let missing = #expect(throws: ProviderError.self) {
            try world.links.remove(linkID: [UInt8](repeating: 0, count: 8))
        }
        #expect(missing?.message == "this phone has no link 0000000000000000")
        try world.links.remove(linkID: try #require(state.links.first?.linkID))
        let after = try #require(try world.links.state())
        #expect(after.links.isEmpty)
        #expect(after.contacts.count == 1)
    }

    @Test func theContactToUseIsTheNamedOneOrTheOnlyOne() throws {
        var state = PhoneLinkState()
        let none = #expect(throws: ProviderError.self) { try PhoneLinks.chooseContact(state, relay: nil) }
        #expect(none?.message == "this phone is registered with no relay")
        state.contacts = [
            PhoneContact(relay: "ws://a.test", contactID: [1], listenerSecret: [1], registered: Date()),
            PhoneContact(relay: "ws://b.test", contactID: [2], listenerSecret: [2], registered: Date()),
        ]
        let several = #expect(throws: ProviderError.self) { try PhoneLinks.chooseContact(state, relay: nil) }
        #expect(several?.message == "this phone is registered with several relays: ws://a.test, ws://b.test")
        #expect(several?.hint == "Choose one with --relay.")
        #expect(try PhoneLinks.chooseContact(state, relay: TunnelServerBaseURL(string: "ws://b.test")).contactID == [2])
        let other = #expect(throws: ProviderError.self) {
            try PhoneLinks.chooseContact(state, relay: TunnelServerBaseURL(string: "ws://c.test"))
        }
        #expect(other?.message == "this phone is not registered with ws://c.test")
        #expect(PhoneLinks.defaultName(hostName: "laptop.example.org") == "passkey on laptop")
    }
}

extension PhoneServiceTests.World {
    /// The same store and air, with a fresh relay whose wake channel may have forgotten the contact, and a person
    /// with no script.
    init(reusing world: PhoneServiceTests.World, forgotten: Bool) {
        directory = world.directory
        store = world.store
        wake = ScriptedListenerRelay(forgotten: forgotten)
        person = ScriptedPerson()
    }
}
