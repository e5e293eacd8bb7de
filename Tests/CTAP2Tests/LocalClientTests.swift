import CBOR
import CTAP2
import Crypto
import Foundation
import TestSupport
import Testing
import WebAuthn

/// The CTRAPS list (Casagrande and Antonioli, "CTRAPS: CTAP Impersonation and API Confusion on FIDO2", EuroS&P 2025):
/// a program on this computer talks to `passkey serve` (any local user can send datagrams to `--udp`; the console
/// user's programs can open the hidraw node of `--uhid`) and nobody answers the prompt. One test per command, each
/// cited by the table in `Docs/SecurityKey.md`: what the key answers, what it asks, and that nothing changed.
///
/// The owner's store is made first; the attacker then meets a freshly started key over it (a new `Authenticator`,
/// so inside reset's 10-second window) whose every prompt goes unanswered (CTAP2_ERR_USER_ACTION_TIMEOUT, 0x2F).
struct LocalClientTests {
    static let cm = 0x04
    static let lbw = 0x10
    static let acfg = 0x20

    /// The owner's key: alice and bob at example.com (credProtect 1), carol at other.example (credProtect 2), dave at
    /// example.com (credProtect 3), and a non-discoverable credential at example.com; with `pin`, a PIN the owner set.
    static func owner(
        pin: String? = nil, configuration: AuthenticatorConfiguration = .securityKey
    ) async throws -> (store: InMemoryCredentialStore, ids: [String: [UInt8]]) {
        let store = InMemoryCredentialStore()
        let harness = Harness(configuration: configuration, store: store)
        var ids: [String: [UInt8]] = [:]
        let people: [(String, String, Int, Bool)] = [
            ("alice", "example.com", 1, true), ("bob", "example.com", 1, true), ("carol", "other.example", 2, true),
            ("dave", "example.com", 3, true), ("server-side", "example.com", 1, false),
        ]
        for (index, (name, rp, level, discoverable)) in people.enumerated() {
            let request = Fixtures.makeCredential(
                rp: rp, userID: [UInt8(index + 1)], name: name, options: discoverable ? ["rk": true] : nil,
                extra: [6: ["credProtect": .int(level)]])
            let (status, body) = try await harness.send(.makeCredential, request)
            try #require(status == 0)
            let authData = try AuthenticatorData(bytes: try #require(body?[2]?.bytesValue))
            ids[name] = try #require(authData.attestedCredentialData).credentialID
        }
        try store.saveLargeBlobArray(Self.ownersBlobs)
        if let pin { try #require(try await PlatformDouble(harness: harness).setPIN(pin) == 0) }
        return (store, ids)
    }

    /// A large-blob array of the owner's: one opaque entry (`{1: ciphertext, 2: nonce, 3: origSize}`) and its hash.
    static let ownersBlobs: [UInt8] = {
        let array: CBORValue = [
            [1: .bytes([UInt8](repeating: 0xA5, count: 40)), 2: .bytes([UInt8](repeating: 1, count: 12)), 3: 24]
        ]
        let body = array.encoded()
        return body + Array(SHA256.hash(data: body).prefix(16))
    }()

    /// The key as a local program finds it: started afresh over the owner's store, nobody answering any prompt.
    static func attacker(
        _ store: InMemoryCredentialStore, configuration: AuthenticatorConfiguration = .securityKey
    ) -> Harness {
        Harness(answers: Array(repeating: .timedOut, count: 64), configuration: configuration, store: store, seed: 7)
    }

    /// What must not change: the credentials (and their names), the settings, the large-blob array.
    struct Snapshot: Equatable {
        var credentials: [String]
        var settings: AuthenticatorSettings
        var largeBlobs: [UInt8]?
    }

    static func snapshot(_ store: InMemoryCredentialStore) throws -> Snapshot {
        Snapshot(
            credentials: try store.allCredentials().map { "\($0.id) \($0.userName ?? "-")" }.sorted(),
            settings: try store.settings(), largeBlobs: try store.largeBlobArray())
    }

    /// A pinUvAuthParam of the right length under a token the attacker made up.
    static let forged: [UInt8] = [UInt8](repeating: 0x5A, count: 32)

    // MARK: authenticatorReset (0x07)

    /// Reset deletes everything, so it needs the user inside the first 10 s after start (CTAP 2.1 §6.6: "within 10
    /// seconds of powering up"); after the window it is CTAP2_ERR_NOT_ALLOWED without a prompt.
    @Test func reset() async throws {
        let (store, _) = try await Self.owner()
        let before = try Self.snapshot(store)
        let attacker = Self.attacker(store)
        #expect(try await attacker.send(.reset).status == 0x2F)
        #expect(attacker.user.requests.map(\.action) == [.reset(passkeyCount: 5)])
        attacker.clock.advance(by: .seconds(11))
        #expect(try await attacker.send(.reset).status == 0x30)
        #expect(attacker.user.requests.count == 1)
        #expect(try Self.snapshot(store) == before)
    }

    // MARK: authenticatorCredentialManagement (0x0A, and 0x41)

    /// Every subcommand that reads or changes credentials needs a pinUvAuthToken with the cm permission (§6.8); the
    /// GetNext subcommands only continue an enumeration begun with one. Without a PIN the attacker cannot get such
    /// a token: built-in verification asks for the passphrase, and setPIN asks the user (`setPIN` below).
    @Test(arguments: [CTAPCommand.credentialManagement, .credentialManagementPreview])
    func credentialManagement(command: CTAPCommand) async throws {
        let (store, ids) = try await Self.owner()
        let before = try Self.snapshot(store)
        let attacker = Self.attacker(store)
        let hash: CBORValue = .bytes(Array(SHA256.hash(data: Array("example.com".utf8))))
        let alice: CBORValue = ["id": .bytes(ids["alice"]!), "type": "public-key"]
        let subcommands: [(Int, CBORValue?)] = [
            (1, nil), (2, nil), (4, [1: hash]), (6, [2: alice]), (7, [2: alice, 3: ["id": .bytes([1]), "name": "x"]]),
        ]
        for (subcommand, parameters) in subcommands {
            var request: [CBORValue: CBORValue] = [1: .int(subcommand)]
            if let parameters { request[2] = parameters }
            #expect(try await attacker.send(command, .map(request)).status == 0x36, "subcommand \(subcommand)")
            request[3] = 2
            request[4] = .bytes(Self.forged)
            #expect(try await attacker.send(command, .map(request)).status == 0x33, "subcommand \(subcommand)")
        }
        #expect(try await attacker.send(command, [1: 3]).status == 0x30)
        #expect(try await attacker.send(command, [1: 5]).status == 0x30)

        let platform = PlatformDouble(harness: attacker)
        #expect(try await platform.pinToken("1234", permissions: Self.cm).status == 0x35)
        #expect(try await platform.uvToken(permissions: Self.cm).status == 0x2F)
        #expect(attacker.user.requests.map(\.action) == [.verifyUser(relyingPartyID: nil)])
        #expect(try Self.snapshot(store) == before)
    }

    // MARK: authenticatorClientPIN (0x06)

    /// setPIN has no user-presence step in CTAP 2.1 (§6.5.5), but the first PIN is the key to credential management,
    /// large blobs and configuration: a program that set it could take a cm token and delete every passkey without a
    /// click. This key asks the user before storing a first PIN (after the request's checks, so a malformed one asks
    /// nothing); unanswered, no PIN is set and the token stays out of reach. The PIN-only key the same.
    @Test(arguments: [AuthenticatorConfiguration.securityKey, .pinOnlySecurityKey])
    func setPIN(configuration: AuthenticatorConfiguration) async throws {
        let (store, ids) = try await Self.owner(configuration: configuration)
        let before = try Self.snapshot(store)
        let attacker = Self.attacker(store, configuration: configuration)
        let platform = PlatformDouble(harness: attacker)
        #expect(try await platform.setPIN("1234", block: [UInt8](repeating: 0, count: 64)) == 0x37)
        #expect(attacker.user.requests.isEmpty)
        #expect(try await platform.setPIN("1234") == 0x2F)
        #expect(attacker.user.requests.map(\.action) == [.setPIN])
        #expect(try store.settings().isPINSet == false)
        #expect(try await platform.pinToken("1234", permissions: Self.cm).status == 0x35)
        let delete = try await attacker.send(
            .credentialManagement, [1: 6, 2: [2: ["id": .bytes(ids["alice"]!), "type": "public-key"]]])
        #expect(delete.status == 0x36)
        #expect(try Self.snapshot(store) == before)

        // With the user's approval (`passkey serve --yes` gives it) the PIN is set, as python-fido2 and Chromium do.
        let owner = Harness(configuration: configuration, store: store)
        #expect(try await PlatformDouble(harness: owner).setPIN("1234") == 0)
        #expect(owner.user.requests.map(\.action) == [.setPIN])
        #expect(try store.settings().isPINSet)
    }

    /// With a PIN set, changePIN, getPinToken and getPinUvAuthTokenUsingPinWithPermissions need it (§6.5.5): each
    /// wrong guess costs one of 8 retries, kept in the store before the comparison, and the third in a row blocks
    /// PIN use until `passkey serve` restarts. An attacker who cannot restart the key gets 3 guesses; one who sees it
    /// restarted 3 times without the owner using the PIN in between can block it for good (then only reset helps, and
    /// built-in verification is blocked with it, §6.5.2.2). Nothing is asked.
    @Test func changePINAndPINTokens() async throws {
        let (store, _) = try await Self.owner(pin: "owner's PIN")
        let before = try Self.snapshot(store)
        let attacker = Self.attacker(store)
        let platform = PlatformDouble(harness: attacker)
        #expect(try await platform.changePIN(from: "1234", to: "5678") == 0x31)
        #expect(try await platform.pinToken("0000", permissions: nil).status == 0x31)
        #expect(try await platform.pinToken("1111", permissions: Self.cm).status == 0x34)
        #expect(try await platform.pinToken("owner's PIN", permissions: Self.cm).status == 0x34)
        #expect(try await platform.retries() == (5, true))
        #expect(try await platform.setPIN("1234") == 0x30)
        #expect(attacker.user.requests.isEmpty)
        #expect(try store.settings().pinHash == PlatformDouble.pinHash("owner's PIN"))
        #expect(try store.settings().pinRetries == 5)
        var unchanged = before
        unchanged.settings.pinRetries = 5
        #expect(try Self.snapshot(store) == unchanged)

        // A restart gives three more guesses; the owner's PIN restores all 8.
        let restarted = Self.attacker(store)
        #expect(try await PlatformDouble(harness: restarted).pinToken("2222", permissions: Self.cm).status == 0x31)
        #expect(try await PlatformDouble(harness: restarted).pinToken("owner's PIN", permissions: Self.cm).status == 0)
        #expect(try store.settings().pinRetries == 8)
    }

    /// getPinUvAuthTokenUsingUvWithPermissions verifies the user with the store passphrase (built-in verification):
    /// the prompt goes unanswered and no token is issued. The PIN-only key has no such subcommand.
    @Test func builtInVerificationToken() async throws {
        let (store, _) = try await Self.owner()
        let attacker = Self.attacker(store)
        let platform = PlatformDouble(harness: attacker)
        for permissions in [0x01, 0x02, Self.cm, Self.lbw, Self.acfg] {
            #expect(try await platform.uvToken(permissions: permissions, rpID: nil).status == 0x2F)
        }
        #expect(attacker.user.requests.allSatisfy { $0.requiresVerification && $0.requiresPresence })
        #expect(attacker.user.requests.count == 5)
        #expect(try store.settings().uvRetries == AuthenticatorSettings.maximumUVRetries)

        let pinOnly = Self.attacker(store, configuration: .pinOnlySecurityKey)
        #expect(try await PlatformDouble(harness: pinOnly).uvToken(permissions: Self.cm).status == 0x3E)
        #expect(pinOnly.user.requests.isEmpty)
    }

    // MARK: authenticatorLargeBlobs (0x0C)

    /// Reading the array needs nothing (§6.10.2: its entries are encrypted under each credential's largeBlobKey,
    /// which only an assertion or credential management hands out); writing needs a token with lbw.
    @Test func largeBlobs() async throws {
        let (store, _) = try await Self.owner()
        let before = try Self.snapshot(store)
        let attacker = Self.attacker(store)
        let read = try await attacker.send(.largeBlobs, [1: 1024, 3: 0])
        #expect(read.status == 0)
        #expect(read.body?[1] == .bytes(Self.ownersBlobs))
        let empty: [UInt8] = [0x80] + Array(SHA256.hash(data: [0x80]).prefix(16))
        #expect(try await attacker.send(.largeBlobs, [2: .bytes(empty), 3: 0, 4: 17]).status == 0x36)
        #expect(
            try await attacker.send(.largeBlobs, [2: .bytes(empty), 3: 0, 4: 17, 5: .bytes(Self.forged), 6: 2]).status
                == 0x33)
        #expect(attacker.user.requests.isEmpty)
        #expect(try Self.snapshot(store) == before)
    }

    // MARK: authenticatorConfig (0x0D)

    /// Every subcommand needs a token with acfg (§6.11: built-in verification is always configured here).
    @Test func authenticatorConfig() async throws {
        let (store, _) = try await Self.owner()
        let before = try Self.snapshot(store)
        let attacker = Self.attacker(store)
        let subcommands: [(Int, CBORValue?)] = [(1, nil), (2, nil), (3, [1: 12, 3: true])]
        for (subcommand, parameters) in subcommands {
            var request: [CBORValue: CBORValue] = [1: .int(subcommand)]
            if let parameters { request[2] = parameters }
            #expect(try await attacker.send(.config, .map(request)).status == 0x36, "subcommand \(subcommand)")
            request[3] = 2
            request[4] = .bytes(Self.forged)
            #expect(try await attacker.send(.config, .map(request)).status == 0x33, "subcommand \(subcommand)")
        }
        #expect(attacker.user.requests.isEmpty)
        #expect(try Self.snapshot(store) == before)
    }

    // MARK: authenticatorGetAssertion (0x02) and authenticatorGetNextAssertion (0x08)

    /// `up: false` is the platforms' pre-flight (CTAP 2.1 §6.2.2; Chromium and libfido2 probe allow lists with it),
    /// so it asks nothing and answers as the specification says: an assertion without the UP flag (which relying
    /// parties refuse) for a credential in the allowList unless it is credProtect level 3, and without an allowList
    /// the level 1 discoverable credentials only, with their user IDs and no names (§12.1). A program that knows a
    /// credential ID learns that this key holds it; one that guesses an RP ID learns whether a level 1 passkey is here.
    /// With user presence the user is asked.
    @Test func getAssertion() async throws {
        let (store, ids) = try await Self.owner()
        let before = try Self.snapshot(store)
        let attacker = Self.attacker(store)
        let silent: CBORValue = ["up": false]

        let probe = try await attacker.send(
            .getAssertion, Fixtures.getAssertion(allowList: [ids["alice"]!], options: silent))
        #expect(probe.status == 0)
        let flags = try AuthenticatorData(bytes: try #require(probe.body?[2]?.bytesValue)).flags
        #expect(!flags.contains(.userPresent) && !flags.contains(.userVerified))
        #expect(probe.body?[4] == ["id": .bytes([1])])
        #expect(
            try await attacker.send(
                .getAssertion, Fixtures.getAssertion(allowList: [ids["server-side"]!], options: silent)
            ).status == 0)
        #expect(
            try await attacker.send(.getAssertion, Fixtures.getAssertion(allowList: [ids["dave"]!], options: silent))
                .status == 0x2E)
        #expect(
            try await attacker.send(
                .getAssertion, Fixtures.getAssertion(rp: "evil.example", allowList: [ids["alice"]!], options: silent)
            ).status == 0x2E)
        #expect(
            try await attacker.send(
                .getAssertion,
                Fixtures.getAssertion(rp: "other.example", allowList: [ids["carol"]!], options: silent)
            ).status == 0)

        let discovered = try await attacker.send(.getAssertion, Fixtures.getAssertion(options: silent))
        #expect(discovered.status == 0)
        #expect(discovered.body?[5] == 2)  // alice and bob; not dave (level 3), not the server-side one
        #expect(discovered.body?[4]?["name"] == nil)
        #expect(try await attacker.send(.getNextAssertion).status == 0)
        #expect(try await attacker.send(.getNextAssertion).status == 0x30)
        #expect(
            try await attacker.send(.getAssertion, Fixtures.getAssertion(rp: "other.example", options: silent)).status
                == 0x2E)
        #expect(attacker.user.requests.isEmpty)

        #expect(try await attacker.send(.getAssertion, Fixtures.getAssertion()).status == 0x2F)
        #expect(try await attacker.send(.getAssertion, Fixtures.getAssertion(options: ["uv": true])).status == 0x2F)
        #expect(attacker.user.requests.count == 2)
        #expect(try Self.snapshot(store) == before)
    }

    // MARK: authenticatorMakeCredential (0x01)

    /// A credential needs the user (`up: false` is CTAP2_ERR_INVALID_OPTION, §6.1.2), so a program can neither fill the
    /// store nor replace a passkey (same RP and user ID) without a click. An excludeList hit waits for the user first.
    @Test func makeCredential() async throws {
        let (store, ids) = try await Self.owner()
        let before = try Self.snapshot(store)
        let attacker = Self.attacker(store)
        #expect(
            try await attacker.send(.makeCredential, Fixtures.makeCredential(options: ["rk": true, "up": false]))
                .status == 0x2C)
        #expect(attacker.user.requests.isEmpty)
        #expect(
            try await attacker.send(.makeCredential, Fixtures.makeCredential(userID: [1], options: ["rk": true]))
                .status == 0x2F)
        #expect(try await attacker.send(.makeCredential, Fixtures.makeCredential(options: nil)).status == 0x2F)
        #expect(
            try await attacker.send(.makeCredential, Fixtures.makeCredential(excludeList: [ids["alice"]!])).status
                == 0x19)
        #expect(
            attacker.user.requests.map(\.action).last == .credentialExcluded(relyingPartyID: "example.com"))
        #expect(attacker.user.requests.count == 3)
        #expect(try Self.snapshot(store) == before)
    }

    // MARK: authenticatorSelection (0x0B) and the touch probe

    /// Selection, and the zero-length pinUvAuthParam platforms send to pick a key (§6.1.2 step 1), wait for the user.
    @Test func selection() async throws {
        let (store, _) = try await Self.owner()
        let attacker = Self.attacker(store)
        #expect(try await attacker.send(.selection).status == 0x2F)
        #expect(
            try await attacker.send(.makeCredential, Fixtures.makeCredential(extra: [8: .bytes([]), 9: 2])).status
                == 0x2F)
        #expect(
            try await attacker.send(.getAssertion, Fixtures.getAssertion(extra: [6: .bytes([]), 7: 2])).status == 0x2F)
        #expect(attacker.user.requests.map(\.action) == [.selection, .selection, .selection])
    }

    // MARK: authenticatorGetInfo (0x04) and getPINRetries

    /// getInfo and getPINRetries answer anyone (§6.4, §6.5.5): the model (AAGUID, versions), whether a PIN is set,
    /// and the retries left. That is what every platform needs before its first request.
    @Test func getInfo() async throws {
        let (store, _) = try await Self.owner(pin: "owner's PIN")
        let attacker = Self.attacker(store)
        let info = try await attacker.send(.getInfo)
        #expect(info.status == 0)
        #expect(info.body?[4]?["clientPin"] == true)
        #expect(try await PlatformDouble(harness: attacker).retries() == (8, false))
        #expect(attacker.user.requests.isEmpty)
    }
}
