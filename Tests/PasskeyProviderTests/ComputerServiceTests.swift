import WebAuthnClientDriver
import Crypto
import Foundation
import Hybrid
import PasskeyFilesIO
import PasskeyProvider
import SecurityKeyDriver
import Synchronization
import TestSupport
import Testing
import WebAuthnClient

/// The computer (browser) role in process: which authenticators `BrowserService` offers for which flags, and how it
/// keeps the computer's linked phones. The authenticators are fakes that record how they were made; the links file
/// is a real one in a temporary directory. No radio, relay, child process or sleep.
struct ComputerServiceTests {
    static let relay = "wss://relay.test"
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    /// An authenticator that only says what it is: the engine never opens it here.
    struct FakeAuthenticator: ClientAuthenticator {
        let kind: AuthenticatorKind
        var transports: [AuthenticatorTransport] { [] }
        func credentials(forRelyingParty relyingPartyID: String) async -> [CredentialMetadata]? { nil }
        func open(for ceremony: ClientCeremony) async throws(AuthenticatorTransportError) -> any AuthenticatorSession {
            throw AuthenticatorTransportError("a fake is never opened")
        }
    }

    /// What the factory was asked to make, and the callbacks it was handed.
    final class Made: Sendable {
        struct State {
            var thisComputer = 0
            var qrPhones: [BrowserAuthenticatorFactory.OnLinking?] = []
            var linked: [(phone: LinkedPhone, gone: @Sendable () -> Void, used: @Sendable () -> Void)] = []
            var securityKeys: [SecurityKeySpec] = []
        }
        let state = Mutex(State())

        var factory: BrowserAuthenticatorFactory {
            BrowserAuthenticatorFactory(
                thisComputer: {
                    self.state.withLock { $0.thisComputer += 1 }
                    return FakeAuthenticator(kind: .platform)
                },
                phone: { onLinking in
                    self.state.withLock { $0.qrPhones.append(onLinking) }
                    return FakeAuthenticator(kind: .hybrid)
                },
                linkedPhone: { phone, gone, used in
                    self.state.withLock { $0.linked.append((phone, gone, used)) }
                    return FakeAuthenticator(kind: .hybrid)
                },
                securityKey: { spec in
                    self.state.withLock { $0.securityKeys.append(spec) }
                    return FakeAuthenticator(kind: .securityKey)
                })
        }
    }

    /// A store directory (its links file beside the store path), the person, and the factory's record.
    struct World {
        let directory: TemporaryDirectory
        let person = ScriptedPerson()
        let made = Made()

        init() throws { directory = try TemporaryDirectory() }

        var files: PasskeyFiles { PasskeyFiles(store: directory.url("passkeys.sqlite")) }

        func links(file: URL? = nil) -> ComputerLinks {
            ComputerLinks(files: files, file: file, interface: person, now: { ComputerServiceTests.now })
        }

        var service: BrowserService { BrowserService(links: links(), factory: made.factory) }
    }

    /// Linking information as a phone sends it after a QR session, under `name`.
    static func linking(name: String) throws -> LinkingInfo {
        try LinkingInfo(
            contactID: [1, 2, 3], linkID: [UInt8](repeating: 7, count: LinkingInfo.linkIDLength),
            linkSecret: [UInt8](repeating: 9, count: LinkingInfo.linkSecretLength),
            identityKey: P256.KeyAgreement.PrivateKey(), name: name,
            clientQRPublicKey: P256.KeyAgreement.PrivateKey().publicKey,
            handshakeHash: [UInt8](repeating: 5, count: 32))
    }

    static func relayURL() throws -> TunnelServerBaseURL { try TunnelServerBaseURL(string: relay) }

    // MARK: Which authenticators

    @Test func everythingAskedForIsOfferedInTheBrowsersOrder() throws {
        let world = try World()
        let offered = try world.service.authenticators(
            for: BrowserAuthenticators(thisComputer: true, phone: .qrCode(link: false), securityKey: .auto))
        #expect(offered.map(\.kind) == [.platform, .hybrid, .securityKey])
        world.made.state.withLock { made in
            #expect(made.thisComputer == 1)
            #expect(made.qrPhones.count == 1)
            #expect(made.securityKeys == [.auto])
        }
    }

    @Test func noPhoneOffersOnlyThisComputerAndTheKey() throws {
        let world = try World()
        let offered = try world.service.authenticators(
            for: BrowserAuthenticators(
                thisComputer: true, phone: .notOffered, securityKey: .udp(host: "127.0.0.1", port: 8111)))
        #expect(offered.map(\.kind) == [.platform, .securityKey])
        world.made.state.withLock { made in
            #expect(made.qrPhones.isEmpty)
            #expect(made.linked.isEmpty)
        }
    }

    /// No store file, or register and sign-in (a phone only): this computer is not offered, nor made.
    @Test func thisComputerIsOfferedOnlyWhenAsked() throws {
        let world = try World()
        let offered = try world.service.authenticators(
            for: BrowserAuthenticators(thisComputer: false, phone: .qrCode(link: false)))
        #expect(offered.map(\.kind) == [.hybrid])
        world.made.state.withLock { #expect($0.thisComputer == 0) }
    }

    // MARK: Remembering a phone

    @Test func withoutLinkThePhoneIsNotOfferedLinking() throws {
        let world = try World()
        _ = try world.service.authenticators(
            for: BrowserAuthenticators(thisComputer: false, phone: .qrCode(link: false)))
        let onLinking = world.made.state.withLock { $0.qrPhones.first }
        #expect(onLinking != nil)
        #expect(onLinking! == nil)
        #expect(!FileManager.default.fileExists(atPath: world.files.computerLinks.path))
    }

    /// `--link` only offers linking: the links file appears once the phone sent linking information, not before.
    @Test func linkRemembersThePhoneOnlyWhenItSentLinkingInformation() throws {
        let world = try World()
        _ = try world.service.authenticators(
            for: BrowserAuthenticators(thisComputer: false, phone: .qrCode(link: true)))
        let onLinking = try #require(world.made.state.withLock { $0.qrPhones.first } ?? nil)
        #expect(try world.links().phones().isEmpty)
        #expect(world.person.computerEvents.isEmpty)

        onLinking(try Self.linking(name: "Pixel"), try Self.relayURL())

        let phones = try world.links().phones()
        #expect(phones.map(\.name) == ["Pixel"])
        #expect(phones.first?.relay.string == Self.relay)
        #expect(phones.first?.created == Self.now)
        #expect(
            world.person.computerEvents == [
                .phoneRemembered(name: "Pixel", file: world.files.computerLinks.path)
            ])
    }

    /// A links file that cannot be written does not fail the ceremony that already succeeded: it is reported.
    @Test func aLinkThatCannotBeSavedIsReported() throws {
        let world = try World()
        let notADirectory = try world.directory.write([1], to: "plain-file")
        let links = world.links(file: URL(fileURLWithPath: notADirectory + "/links.json"))
        links.remember(try Self.linking(name: "Pixel"), relay: try Self.relayURL())
        #expect(world.person.computerEvents.count == 1)
        guard case .linkNotSaved = world.person.computerEvents.first else {
            Issue.record("expected linkNotSaved, got \(world.person.computerEvents)")
            return
        }
    }

    // MARK: Reaching a linked phone

    @Test func linkedReachesThePhoneByNameAndRecordsItsUse() throws {
        let world = try World()
        world.links().remember(try Self.linking(name: "Pixel"), relay: try Self.relayURL())
        let offered = try world.service.authenticators(
            for: BrowserAuthenticators(thisComputer: true, phone: .linked(name: "Pixel")))
        #expect(offered.map(\.kind) == [.platform, .hybrid])
        let linked = try #require(world.made.state.withLock { $0.linked.first })
        #expect(linked.phone.name == "Pixel")
        world.made.state.withLock { #expect($0.qrPhones.isEmpty) }

        linked.used()
        #expect(try world.links().phones().first?.lastUsed == Self.now)
    }

    /// The relay answered 410 (or closed with 4410): the phone revoked the link, which is forgotten and said so.
    @Test func aRevokedLinkIsForgotten() throws {
        let world = try World()
        let links = world.links()
        links.remember(try Self.linking(name: "Pixel"), relay: try Self.relayURL())
        links.remember(try Self.linking(name: "Tablet"), relay: try Self.relayURL())
        _ = try world.service.authenticators(
            for: BrowserAuthenticators(thisComputer: false, phone: .linked(name: "Pixel")))
        let linked = try #require(world.made.state.withLock { $0.linked.first })

        linked.gone()

        #expect(try links.phones().map(\.name) == ["Tablet"])
        #expect(
            world.person.computerEvents.last == .linkRevoked(name: "Pixel", file: world.files.computerLinks.path))
    }

    @Test func anUnknownLinkedNameFailsBeforeAnyPhoneIsMade() throws {
        let world = try World()
        let path = world.files.computerLinks.path
        #expect(
            throws: ProviderError(
                "no linked phone called Pixel in \(path)",
                hint: "Link one: a QR session with --link, answered by `passkey scan --link`.")
        ) {
            try world.service.authenticators(
                for: BrowserAuthenticators(thisComputer: false, phone: .linked(name: "Pixel")))
        }
        world.links().remember(try Self.linking(name: "Tablet"), relay: try Self.relayURL())
        #expect(
            throws: ProviderError("no linked phone called Pixel in \(path)", hint: "Linked phones: Tablet")
        ) {
            try world.service.authenticators(
                for: BrowserAuthenticators(thisComputer: false, phone: .linked(name: "Pixel")))
        }
        world.made.state.withLock { made in
            #expect(made.linked.isEmpty)
            #expect(made.qrPhones.isEmpty)
        }
    }

    // MARK: The links file (`client links`)

    @Test func removeForgetsOnePhoneAndRefusesAnUnknownOne() throws {
        let world = try World()
        let links = world.links()
        links.remember(try Self.linking(name: "Pixel"), relay: try Self.relayURL())
        #expect(throws: ProviderError("no linked phone called Tablet")) { try links.remove(named: "Tablet") }
        try links.remove(named: "Pixel")
        #expect(try links.phones().isEmpty)
    }

    @Test func aDamagedLinksFileIsAProviderError() throws {
        let world = try World()
        let path = try world.directory.write(Array("{\"version\": 2, \"links\": []}".utf8), to: "links.json")
        #expect(
            throws: ProviderError("the links file \(path) has version 2, not 1")
        ) { try world.links().phones() }
        #expect(throws: ProviderError.self) {
            try world.service.authenticators(
                for: BrowserAuthenticators(thisComputer: false, phone: .linked(name: "Pixel")))
        }
    }

    @Test func theLinksFileIsBesideTheStoreUnlessNamed() throws {
        let world = try World()
        #expect(world.links().url == world.directory.url("links.json"))
        let other = world.directory.url("elsewhere.json")
        #expect(world.links(file: other).url == other)
    }
}
