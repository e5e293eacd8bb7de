import WebAuthnClientDriver
import Crypto
import Foundation
import Hybrid
import PasskeyFilesIO
import PasskeyProvider
import PasskeyStoreIO
import SecurityKeyDriver
import Synchronization
import TestSupport
import Testing
import WebAuthnClient

/// The computer (browser) role in process: which authenticators `BrowserService` offers for which flags, and how it
/// keeps the computer's linked phones, sealed in a real store in a temporary directory (and moved there from the
/// clear `links.json` of earlier versions). The authenticators are fakes that record how they were made. No radio,
/// relay, child process or sleep.
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

    /// A store (passphrase "pw", from the environment), the person, the factory's record, and the one unlocked store
    /// the links and this computer share.
    struct World {
        let directory: TemporaryDirectory
        let person = ScriptedPerson()
        let made = Made()
        let unlocked: UnlockedStore

        init(store: Bool = true) throws {
            directory = try TemporaryDirectory()
            let files = PasskeyFiles(store: directory.url("passkeys.sqlite"))
            if store {
                try SQLiteCredentialStore.create(at: files.store, passphrase: "pw", kdf: .testing).close()
            }
            unlocked = UnlockedStore(
                access: StoreAccess(
                    files: files, interface: person, environment: ["PASSKEY_PASSPHRASE": "pw"], canAsk: false))
        }

        var files: PasskeyFiles { unlocked.access.files }

        func links() -> ComputerLinks {
            ComputerLinks(store: unlocked, interface: person, now: { ComputerServiceTests.now })
        }

        var service: BrowserService { BrowserService(links: links(), factory: made.factory) }

        /// Every byte of every file in the directory.
        func everyFile() throws -> [String: [UInt8]] {
            var all: [String: [UInt8]] = [:]
            for name in try FileManager.default.contentsOfDirectory(atPath: directory.url.path) {
                all[name] = [UInt8](try Data(contentsOf: directory.url(name)))
            }
            return all
        }
    }

    /// Linking information as a phone sends it after a QR session, under `name`, with a fresh contact ID and secret.
    static func linking(name: String) throws -> LinkingInfo {
        try LinkingInfo(
            contactID: random(32), linkID: random(LinkingInfo.linkIDLength),
            linkSecret: random(LinkingInfo.linkSecretLength),
            identityKey: P256.KeyAgreement.PrivateKey(), name: name,
            clientQRPublicKey: P256.KeyAgreement.PrivateKey().publicKey,
            handshakeHash: [UInt8](repeating: 5, count: 32))
    }

    static func random(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8.random(in: 0...255) } }

    /// base64url without padding, as the clear links file wrote secrets.
    static func base64url(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    static func relayURL() throws -> TunnelServerBaseURL { try TunnelServerBaseURL(string: relay) }

    // MARK: Which authenticators

    @Test func everythingAskedForIsOfferedInTheBrowsersOrder() async throws {
        let world = try World()
        let offered = try await world.service.authenticators(
            for: BrowserAuthenticators(thisComputer: true, phone: .qrCode(link: false), securityKey: .auto))
        #expect(offered.map(\.kind) == [.platform, .hybrid, .securityKey])
        world.made.state.withLock { made in
            #expect(made.thisComputer == 1)
            #expect(made.qrPhones.count == 1)
            #expect(made.securityKeys == [.auto])
        }
    }

    @Test func noPhoneOffersOnlyThisComputerAndTheKey() async throws {
        let world = try World()
        let offered = try await world.service.authenticators(
            for: BrowserAuthenticators(
                thisComputer: true, phone: .notOffered, securityKey: .udp(host: "127.0.0.1", port: 8111)))
        #expect(offered.map(\.kind) == [.platform, .securityKey])
        world.made.state.withLock { made in
            #expect(made.qrPhones.isEmpty)
            #expect(made.linked.isEmpty)
        }
    }

    /// No store file, or register and sign-in (a phone only): this computer is not offered, nor made.
    @Test func thisComputerIsOfferedOnlyWhenAsked() async throws {
        let world = try World()
        let offered = try await world.service.authenticators(
            for: BrowserAuthenticators(thisComputer: false, phone: .qrCode(link: false)))
        #expect(offered.map(\.kind) == [.hybrid])
        world.made.state.withLock { #expect($0.thisComputer == 0) }
    }

    // MARK: Remembering a phone

    /// A plain QR session neither offers linking nor unlocks the store.
    @Test func withoutLinkThePhoneIsNotOfferedLinking() async throws {
        let world = try World()
        _ = try await world.service.authenticators(
            for: BrowserAuthenticators(thisComputer: false, phone: .qrCode(link: false)))
        let onLinking = world.made.state.withLock { $0.qrPhones.first }
        #expect(onLinking != nil)
        #expect(onLinking! == nil)
        #expect(world.unlocked.current == nil)
        #expect(!FileManager.default.fileExists(atPath: world.files.computerLinks.path))
    }

    /// `--link` unlocks the store and only offers linking: the sealed file appears once the phone sent linking
    /// information, not before.
    @Test func linkRemembersThePhoneOnlyWhenItSentLinkingInformation() async throws {
        let world = try World()
        _ = try await world.service.authenticators(
            for: BrowserAuthenticators(thisComputer: false, phone: .qrCode(link: true)))
        #expect(world.unlocked.current != nil)
        let onLinking = try #require(world.made.state.withLock { $0.qrPhones.first } ?? nil)
        #expect(try await world.links().phones().isEmpty)
        #expect(world.person.computerEvents.isEmpty)

        onLinking(try Self.linking(name: "Pixel"), try Self.relayURL())

        let phones = try await world.links().phones()
        #expect(phones.map(\.name) == ["Pixel"])
        #expect(phones.first?.relay.string == Self.relay)
        #expect(phones.first?.created == Self.now)
        #expect(
            world.person.computerEvents == [
                .phoneRemembered(name: "Pixel", file: world.files.computerLinks.path)
            ])
    }

    /// Issue 23: the link secret and the contact ID (which wakes the phone) are nowhere on disk in clear, in any
    /// encoding; the sealed file is owner-only, opens with the store key and not with another store's.
    @Test func aRememberedLinkIsSealedAndNoSecretIsInClearInAnyFile() async throws {
        let world = try World()
        let linking = try Self.linking(name: "Pixel")
        try await world.links().unlock()
        world.links().remember(linking, relay: try Self.relayURL())
        let files = try world.everyFile()
        #expect(files.keys.contains(world.files.computerLinks.lastPathComponent))
        #expect(!files.keys.contains("links.json"))
        for secret in [linking.linkSecret, linking.contactID] {
            let encodings = [
                secret, Array(Self.base64url(secret).utf8), Array(Data(secret).base64EncodedString().utf8),
                Array(secret.map { String(format: "%02x", $0) }.joined().utf8),
            ]
            for (name, bytes) in files {
                for encoding in encodings {
                    #expect(bytes.firstRange(of: encoding) == nil, "\(name) holds a link secret in clear")
                }
            }
        }
        var info = stat()
        #expect(lstat(world.files.computerLinks.path, &info) == 0 && info.st_mode & 0o777 == 0o600)
        let phones = try await world.links().phones()
        #expect(phones.first?.linking.linkSecret == linking.linkSecret)
        #expect(phones.first?.linking.contactID == linking.contactID)

        // Another store's key does not open it.
        let other = try World()
        try FileManager.default.copyItem(at: world.files.computerLinks, to: other.files.computerLinks)
        await #expect(throws: ProviderError.self) { try await other.links().phones() }
    }

    /// A link that cannot be saved does not fail the ceremony that already succeeded: it is reported.
    @Test func aLinkThatCannotBeSavedIsReported() async throws {
        let world = try World()
        try await world.links().unlock()
        try FileManager.default.createDirectory(at: world.files.computerLinks, withIntermediateDirectories: false)
        world.links().remember(try Self.linking(name: "Pixel"), relay: try Self.relayURL())
        #expect(world.person.computerEvents.count == 1)
        guard case .linkNotSaved = world.person.computerEvents.first else {
            Issue.record("expected linkNotSaved, got \(world.person.computerEvents)")
            return
        }
    }

    /// Without a store there is nowhere to seal a link: `--link` and `--phone` fail at once, saying how to make one,
    /// and no phone is made.
    @Test func withoutAStoreLinkingFailsSayingToCreateOne() async throws {
        let world = try World(store: false)
        let error = ProviderError(
            "linked phones are sealed in the passkey store, and there is none at \(world.files.store.path)",
            hint: "Create one with `passkey init`, or choose another with --store or PASSKEY_STORE.")
        for phone: BrowserAuthenticators.Phone in [.qrCode(link: true), .linked(name: "Pixel")] {
            await #expect(throws: error) {
                try await world.service.authenticators(for: BrowserAuthenticators(thisComputer: false, phone: phone))
            }
        }
        await #expect(throws: error) { try await world.links().phones() }
        world.made.state.withLock { made in
            #expect(made.qrPhones.isEmpty)
            #expect(made.linked.isEmpty)
        }
        #expect(error.message.contains("\n") == false)
        // A plain QR session needs no store.
        _ = try await world.service.authenticators(
            for: BrowserAuthenticators(thisComputer: false, phone: .qrCode(link: false)))
    }

    // MARK: Moving the clear links.json of earlier versions

    /// Issue 23: the first unlock moves the clear file's links into the sealed file, then removes the clear one; a
    /// link already sealed (same phone or name) wins.
    @Test func theFirstUnlockSealsTheClearLinksFileAndRemovesIt() async throws {
        let world = try World()
        let clear = LinkedPhoneBook(storage: LinkedPhoneBook.clearFile(world.files.clearComputerLinks))
        let pixel = try Self.linking(name: "Pixel")
        let tablet = try Self.linking(name: "Tablet")
        try clear.remember(pixel, relay: try Self.relayURL(), now: Self.now)
        try clear.remember(tablet, relay: try Self.relayURL(), now: Self.now)
        try clear.used("Pixel", now: Self.now.addingTimeInterval(60))
        // One of them was sealed already (linked again after an earlier move, say): the sealed one wins.
        let newerTablet = try Self.linking(name: "Tablet")
        _ = try await world.unlocked.open()
        world.links().remember(newerTablet, relay: try Self.relayURL())
        let before = world.person.computerEvents.count

        let phones = try await world.links().phones()

        #expect(phones.map(\.name) == ["Tablet", "Pixel"])
        #expect(phones.first?.linking.linkSecret == newerTablet.linkSecret)
        #expect(phones.last?.linking.linkSecret == pixel.linkSecret)
        #expect(phones.last?.lastUsed == Self.now.addingTimeInterval(60))
        #expect(!FileManager.default.fileExists(atPath: world.files.clearComputerLinks.path))
        #expect(
            Array(world.person.computerEvents.dropFirst(before)) == [
                .linksSealed(
                    count: 1, from: world.files.clearComputerLinks.path, to: world.files.computerLinks.path)
            ])
        for (_, bytes) in try world.everyFile() {
            #expect(bytes.firstRange(of: Array(Self.base64url(pixel.linkSecret).utf8)) == nil)
        }
    }

    /// A move cut short after the sealed file was written but before the clear one went: the next unlock finishes
    /// it, with no link lost or doubled.
    @Test func aMoveCutShortIsFinishedByTheNextUnlock() async throws {
        let world = try World()
        let clear = LinkedPhoneBook(storage: LinkedPhoneBook.clearFile(world.files.clearComputerLinks))
        try clear.remember(try Self.linking(name: "Pixel"), relay: try Self.relayURL(), now: Self.now)
        let saved = try #require(try OwnerOnlyFile.read(world.files.clearComputerLinks, limit: 1 << 20))
        #expect(try await world.links().phones().map(\.name) == ["Pixel"])
        // The crash: the clear file is back as it was.
        try OwnerOnlyFile.write(saved, to: world.files.clearComputerLinks)

        let again = World.reopened(world)
        #expect(try await again.phones().map(\.name) == ["Pixel"])
        #expect(!FileManager.default.fileExists(atPath: world.files.clearComputerLinks.path))
    }

    /// A clear file that cannot be read is an error naming it (and what to do), not a silent loss; nothing is removed.
    @Test func aDamagedClearLinksFileIsAProviderError() async throws {
        let world = try World()
        let path = try world.directory.write(Array("{\"version\": 2, \"links\": []}".utf8), to: "links.json")
        await #expect(
            throws: ProviderError(
                "the linked phones in \(path) have version 2, not 1",
                hint: "Move \(path) away to use the links sealed in the store without it.")
        ) { try await world.links().phones() }
        await #expect(throws: ProviderError.self) {
            try await world.service.authenticators(
                for: BrowserAuthenticators(thisComputer: false, phone: .linked(name: "Pixel")))
        }
        #expect(FileManager.default.fileExists(atPath: path))
    }

    /// A sealed file that does not open with the store key is an error, never replaced.
    @Test func aDamagedSealedFileIsAProviderError() async throws {
        let world = try World()
        try OwnerOnlyFile.write(Array("PKCL\u{1}garbage".utf8), to: world.files.computerLinks)
        await #expect(throws: ProviderError.self) { try await world.links().phones() }
        world.links().remember(try Self.linking(name: "Pixel"), relay: try Self.relayURL())
        #expect(try OwnerOnlyFile.read(world.files.computerLinks, limit: 100) == Array("PKCL\u{1}garbage".utf8))
    }

    // MARK: Reaching a linked phone

    @Test func linkedReachesThePhoneByNameAndRecordsItsUse() async throws {
        let world = try World()
        try await world.links().unlock()
        world.links().remember(try Self.linking(name: "Pixel"), relay: try Self.relayURL())
        let offered = try await world.service.authenticators(
            for: BrowserAuthenticators(thisComputer: true, phone: .linked(name: "Pixel")))
        #expect(offered.map(\.kind) == [.platform, .hybrid])
        let linked = try #require(world.made.state.withLock { $0.linked.first })
        #expect(linked.phone.name == "Pixel")
        world.made.state.withLock { #expect($0.qrPhones.isEmpty) }

        linked.used()
        #expect(try await world.links().phones().first?.lastUsed == Self.now)
    }

    /// The relay answered 410 (or closed with 4410): the phone revoked the link, which is forgotten and said so.
    @Test func aRevokedLinkIsForgotten() async throws {
        let world = try World()
        let links = world.links()
        try await links.unlock()
        links.remember(try Self.linking(name: "Pixel"), relay: try Self.relayURL())
        links.remember(try Self.linking(name: "Tablet"), relay: try Self.relayURL())
        _ = try await world.service.authenticators(
            for: BrowserAuthenticators(thisComputer: false, phone: .linked(name: "Pixel")))
        let linked = try #require(world.made.state.withLock { $0.linked.first })

        linked.gone()

        #expect(try await links.phones().map(\.name) == ["Tablet"])
        #expect(
            world.person.computerEvents.last == .linkRevoked(name: "Pixel", file: world.files.computerLinks.path))
    }

    @Test func anUnknownLinkedNameFailsBeforeAnyPhoneIsMade() async throws {
        let world = try World()
        await #expect(
            throws: ProviderError(
                "no linked phone called Pixel",
                hint: "Link one: a QR session with --link, answered by `passkey scan --link`.")
        ) {
            try await world.service.authenticators(
                for: BrowserAuthenticators(thisComputer: false, phone: .linked(name: "Pixel")))
        }
        world.links().remember(try Self.linking(name: "Tablet"), relay: try Self.relayURL())
        await #expect(
            throws: ProviderError("no linked phone called Pixel", hint: "Linked phones: Tablet")
        ) {
            try await world.service.authenticators(
                for: BrowserAuthenticators(thisComputer: false, phone: .linked(name: "Pixel")))
        }
        world.made.state.withLock { made in
            #expect(made.linked.isEmpty)
            #expect(made.qrPhones.isEmpty)
        }
    }

    // MARK: `client links`

    @Test func removeForgetsOnePhoneAndRefusesAnUnknownOne() async throws {
        let world = try World()
        let links = world.links()
        try await links.unlock()
        links.remember(try Self.linking(name: "Pixel"), relay: try Self.relayURL())
        await #expect(throws: ProviderError("no linked phone called Tablet")) {
            try await links.remove(named: "Tablet")
        }
        try await links.remove(named: "Pixel")
        #expect(try await links.phones().isEmpty)
    }

    @Test func aKeyWithAPhoneBehindItTriesTheNamedLinkElseTheMostRecentlyUsed() throws {
        let relay = try Self.relayURL()
        let day: TimeInterval = 86_400
        let old = LinkedPhone(
            name: "Old", relay: relay, linking: try Self.linking(name: "Old"), created: Self.now - 9 * day,
            lastUsed: Self.now - day)
        let used = LinkedPhone(
            name: "Used", relay: relay, linking: try Self.linking(name: "Used"), created: Self.now - 8 * day,
            lastUsed: Self.now - 60)
        let new = LinkedPhone(
            name: "New", relay: relay, linking: try Self.linking(name: "New"), created: Self.now - 3600)
        let phones = [old, used, new]
        #expect(ComputerLinks.bridgePhone(among: phones, named: nil) == used)
        // Never used: its linking counts as its last use.
        #expect(ComputerLinks.bridgePhone(among: [old, new], named: nil) == new)
        #expect(ComputerLinks.bridgePhone(among: phones, named: "Old") == old)
        #expect(ComputerLinks.bridgePhone(among: phones, named: "Tablet") == nil)
        #expect(ComputerLinks.bridgePhone(among: [], named: nil) == nil)
    }

    @Test func theSealedFileIsBesideTheStore() throws {
        let world = try World()
        #expect(world.links().url == world.directory.url("passkeys.computer-links.sealed"))
    }
}

extension ComputerServiceTests.World {
    /// The links of `world`'s store through a fresh unlock, as the next command sees them.
    static func reopened(_ world: Self) -> ComputerLinks {
        ComputerLinks(
            store: UnlockedStore(access: world.unlocked.access), interface: world.person,
            now: { ComputerServiceTests.now })
    }
}
