import CBOR
import CTAP2
import SecurityKeyDriver
import Synchronization
import Testing
import WebAuthn

/// A PIN provider for tests: answers from a script and remembers what it was asked.
final class PINScript: Sendable {
    private let answers: Mutex<[String?]>
    private let asked = Mutex<[PINRequest]>([])

    init(_ answers: [String?]) { self.answers = Mutex(answers) }

    var requests: [PINRequest] { asked.withLock { $0 } }

    var provider: PINProvider {
        { request in
            self.asked.withLock { $0.append(request) }
            return self.answers.withLock { $0.isEmpty ? nil : $0.removeFirst() }
        }
    }
}

/// The clientPIN flow against `passkey serve --udp` in process: keys with a PIN and without built-in verification
/// (`--pin-only`, like most hardware keys), both PIN/UV auth protocols, CTAP 2.0's getPinToken, and every PIN error.
struct SecurityKeyPINTests {
    static let pin = "2468-pin"

    static func open(
        _ key: TestKey, pins: PINScript, attempts: Int = 1
    ) async throws -> SecurityKey {
        var options = SecurityKeyOptions()
        // The limit only ends a failing test: the in-process key answers in milliseconds, except on a loaded machine.
        options.commandTimeout = .seconds(60)
        options.pin = pins.provider
        options.pinAttempts = attempts
        return try await SecurityKey.open(key.spec, options: options)
    }

    /// Keys that offer less: protocol 1 only; and a CTAP 2.0 key (no permission tokens, protocol 1).
    enum Offer: String, CaseIterable, CustomTestStringConvertible {
        case protocolTwo, protocolOneOnly, ctap20

        var testDescription: String { rawValue }

        var getInfo: (@Sendable (inout [CBORValue: CBORValue]) -> Void)? {
            switch self {
            case .protocolTwo: nil
            case .protocolOneOnly: { body in body[6] = [1] }
            case .ctap20:
                { body in
                    body[1] = ["FIDO_2_0"]
                    body[6] = [1]
                    var options = body[4]?.mapValue ?? [:]
                    options["pinUvAuthToken"] = nil
                    options["makeCredUvNotRqd"] = nil
                    body[4] = .map(options)
                }
            }
        }

        var tokenRequest: String {
            switch self {
            case .protocolTwo, .protocolOneOnly: "clientPIN getPinUvAuthTokenUsingPinWithPermissions permissions 0x"
            case .ctap20: "clientPIN getPINToken -> OK"
            }
        }
    }

    @Test(arguments: Offer.allCases)
    func theKeyVerifiesTheUserThroughAToken(offer: Offer) async throws {
        let server = try await TestKey.start(configuration: .pinOnlySecurityKey, pin: Self.pin, getInfo: offer.getInfo)
        defer { Task { await server.close() } }
        let pins = PINScript([Self.pin, Self.pin])
        let key = try await Self.open(server, pins: pins)
        let flags = try await Ceremony.roundTrip(key)
        #expect(flags.registered.contains([.userPresent, .userVerified]))
        #expect(flags.signedIn.contains([.userPresent, .userVerified]))
        #expect(pins.requests.map(\.retriesLeft) == [8, 8])
        #expect(pins.requests.map(\.relyingPartyID) == ["example.com", "example.com"])
        #expect(!pins.requests.contains { $0.previousAttemptWasWrong })

        let log = server.log
        #expect(log.filter { $0.hasPrefix(offer.tokenRequest) }.count == 2, "\(log)")
        if offer != .ctap20 {
            #expect(log.contains("clientPIN getPinUvAuthTokenUsingPinWithPermissions permissions 0x01 -> OK"))
            #expect(log.contains("clientPIN getPinUvAuthTokenUsingPinWithPermissions permissions 0x02 -> OK"))
        }
        // The token replaced `uv`, which a key without built-in verification refuses.
        #expect(log.contains("makeCredential options {rk: true} pinUvAuthParam: present -> OK"))
        #expect(log.contains("getAssertion options {} pinUvAuthParam: present -> OK"))
        #expect(!log.contains { $0.contains("PUAT_REQUIRED") || $0.contains("INVALID_OPTION") })
        await key.close()
    }

    @Test func theProtocolTheKeyPrefersIsUsed() async throws {
        // The authenticator answers with the protocol it was asked for; a token of the other protocol would fail.
        for offer in [Offer.protocolTwo, .protocolOneOnly] {
            let server = try await TestKey.start(
                configuration: .pinOnlySecurityKey, pin: Self.pin, getInfo: offer.getInfo)
            let key = try await Self.open(server, pins: PINScript([Self.pin]))
            let response = try await key.send(ctapCommand: Ceremony.makeCredential(Ceremony.clientDataHash()))
            #expect(response.first == 0)
            await key.close()
            await server.close()
        }
    }

    @Test func aWrongPINSaysHowManyTriesAreLeftAndNeverShowsThePIN() async throws {
        let server = try await TestKey.start(configuration: .pinOnlySecurityKey, pin: Self.pin)
        defer { Task { await server.close() } }
        let wrong = "9999-wrong"
        let key = try await Self.open(server, pins: PINScript([wrong]))
        do {
            _ = try await key.send(ctapCommand: Ceremony.makeCredential(Ceremony.clientDataHash()))
            Issue.record("a wrong PIN made a credential")
        } catch {
            #expect(error == .pinInvalid(retriesLeft: 7))
            #expect("\(error)" == "wrong PIN: 7 tries left")
            #expect(!"\(error)".contains(wrong) && !"\(error)".contains(Self.pin))
        }
        #expect(!server.log.contains { $0.hasPrefix("makeCredential") })
        await key.close()
    }

    @Test func aWrongPINIsAskedForAgainWhenTheCallerAllows() async throws {
        let server = try await TestKey.start(configuration: .pinOnlySecurityKey, pin: Self.pin)
        defer { Task { await server.close() } }
        let pins = PINScript(["1111-wrong", Self.pin])
        let key = try await Self.open(server, pins: pins, attempts: 3)
        #expect(try await key.send(ctapCommand: Ceremony.makeCredential(Ceremony.clientDataHash())).first == 0)
        #expect(pins.requests.map(\.retriesLeft) == [8, 7])
        #expect(pins.requests.map(\.previousAttemptWasWrong) == [false, true])
        // The correct PIN restored the counter.
        #expect(try server.store.settings().pinRetries == 8)
        await key.close()
    }

    @Test func theLastWrongTryBlocksThePIN() async throws {
        let server = try await TestKey.start(configuration: .pinOnlySecurityKey, pin: Self.pin, retries: 1)
        defer { Task { await server.close() } }
        let key = try await Self.open(server, pins: PINScript(["0000-wrong"]))
        await #expect(throws: SecurityKeyError.pinBlocked) {
            try await key.send(ctapCommand: Ceremony.makeCredential(Ceremony.clientDataHash()))
        }
        await key.close()
    }

    @Test func aBlockedPINIsNotAskedFor() async throws {
        let server = try await TestKey.start(configuration: .pinOnlySecurityKey, pin: Self.pin, retries: 0)
        defer { Task { await server.close() } }
        let pins = PINScript([Self.pin])
        let key = try await Self.open(server, pins: pins)
        await #expect(throws: SecurityKeyError.pinBlocked) {
            try await key.send(ctapCommand: Ceremony.makeCredential(Ceremony.clientDataHash()))
        }
        #expect(pins.requests.isEmpty)
        #expect("\(SecurityKeyError.pinBlocked)".contains("reset"))
        await key.close()
    }

    @Test func threeWrongPINsInARowNeedTheKeyPluggedInAgain() async throws {
        let server = try await TestKey.start(configuration: .pinOnlySecurityKey, pin: Self.pin)
        defer { Task { await server.close() } }
        let pins = PINScript(["1111-wrong", "2222-wrong", "3333-wrong"])
        let key = try await Self.open(server, pins: pins, attempts: 5)
        await #expect(throws: SecurityKeyError.pinAuthBlocked) {
            try await key.send(ctapCommand: Ceremony.makeCredential(Ceremony.clientDataHash()))
        }
        #expect(pins.requests.map(\.retriesLeft) == [8, 7, 6])
        #expect("\(SecurityKeyError.pinAuthBlocked)".contains("unplug"))
        await key.close()
    }

    @Test func verificationWithoutAPINSetIsRefusedBeforeTheKeyIsAsked() async throws {
        let server = try await TestKey.start(configuration: .pinOnlySecurityKey)
        defer { Task { await server.close() } }
        let pins = PINScript([Self.pin])
        let key = try await Self.open(server, pins: pins)
        await #expect(throws: SecurityKeyError.pinNotSet) {
            try await key.send(ctapCommand: Ceremony.makeCredential(Ceremony.clientDataHash()))
        }
        #expect(server.log == ["getInfo -> OK"])
        #expect(pins.requests.isEmpty)
        // Without `uv`, the key makes the credential with user presence alone.
        let response = try await key.send(
            ctapCommand: Ceremony.makeCredential(Ceremony.clientDataHash(), userVerification: false))
        let made = try MakeCredentialResponse(ctapResponse: response)
        #expect(!made.attestationObject.authenticatorData.flags.contains(.userVerified))
        await key.close()
    }

    @Test func withoutAPINProviderTheKeyNeedingOneIsAnError() async throws {
        let server = try await TestKey.start(configuration: .pinOnlySecurityKey, pin: Self.pin)
        defer { Task { await server.close() } }
        var options = SecurityKeyOptions()
        options.commandTimeout = .seconds(60)
        let key = try await SecurityKey.open(server.spec, options: options)
        await #expect(throws: SecurityKeyError.pinRequired) {
            try await key.send(ctapCommand: Ceremony.makeCredential(Ceremony.clientDataHash()))
        }
        await key.close()
    }

    @Test(arguments: [nil, "12", String(repeating: "7", count: 64)] as [String?])
    func noPINOrAnImpossibleOneSendsNothing(pin: String?) async throws {
        let server = try await TestKey.start(configuration: .pinOnlySecurityKey, pin: Self.pin)
        defer { Task { await server.close() } }
        let key = try await Self.open(server, pins: PINScript([pin]))
        await #expect(throws: pin == nil ? SecurityKeyError.pinEntryCancelled : .pinImpossible) {
            try await key.send(ctapCommand: Ceremony.makeCredential(Ceremony.clientDataHash()))
        }
        #expect(!server.log.contains { $0.contains("Token") || $0.contains("getKeyAgreement") })
        #expect(try server.store.settings().pinRetries == 8)
        await key.close()
    }

    @Test func aTokenRequiredAnswerBringsThePIN() async throws {
        // The default security key verifies users itself (the store passphrase) but, once a PIN is set, wants a token
        // for a discoverable credential sent without `uv`, as libfido2 sends it for ssh-keygen.
        let server = try await TestKey.start(configuration: .securityKey, pin: Self.pin)
        defer { Task { await server.close() } }
        let key = try await Self.open(server, pins: PINScript([Self.pin]))
        let response = try await key.send(
            ctapCommand: Ceremony.makeCredential(Ceremony.clientDataHash(), userVerification: false))
        #expect(response.first == 0)
        #expect(
            server.log == [
                "getInfo -> OK",
                "makeCredential options {rk: true} pinUvAuthParam: absent -> CTAP2_ERR_PUAT_REQUIRED (0x36)",
                "getInfo -> OK", "clientPIN getPINRetries -> OK", "clientPIN getKeyAgreement -> OK",
                "clientPIN getPinUvAuthTokenUsingPinWithPermissions permissions 0x01 -> OK",
                "makeCredential options {rk: true} pinUvAuthParam: present -> OK",
            ])
        await key.close()
    }

    @Test func aDiscoverableCredentialOnAPINOnlyKeyGetsATokenUpFront() async throws {
        let server = try await TestKey.start(configuration: .pinOnlySecurityKey, pin: Self.pin)
        defer { Task { await server.close() } }
        let key = try await Self.open(server, pins: PINScript([Self.pin]))
        let response = try await key.send(
            ctapCommand: Ceremony.makeCredential(Ceremony.clientDataHash(), userVerification: false))
        #expect(response.first == 0)
        #expect(!server.log.contains { $0.contains("PUAT_REQUIRED") })
        // A non-discoverable one does not need it (makeCredUvNotRqd).
        let plain = try await key.send(
            ctapCommand: Ceremony.makeCredential(
                Ceremony.clientDataHash(), discoverable: false, userVerification: false))
        #expect(plain.first == 0)
        #expect(server.log.last == "makeCredential options {} pinUvAuthParam: absent -> OK")
        await key.close()
    }

    @Test func aRequestTheCallerSignedGoesAsItIs() async throws {
        let server = try await TestKey.start(configuration: .pinOnlySecurityKey, pin: Self.pin)
        defer { Task { await server.close() } }
        let pins = PINScript([Self.pin])
        let key = try await Self.open(server, pins: pins)
        var parameters = try #require(
            try CBORValue(
                decoding: Array(
                    Ceremony.makeCredential(Ceremony.clientDataHash(), userVerification: false).dropFirst())
            ).mapValue)
        parameters[8] = .bytes([UInt8](repeating: 1, count: 32))
        parameters[9] = 2
        let response = try await key.send(ctapCommand: [0x01] + CBORValue.map(parameters).encoded())
        #expect(response == [CTAPError.pinAuthInvalid.rawValue])
        #expect(pins.requests.isEmpty)
        await key.close()
    }
}
