import Basics
import CBOR
import CTAP2
import CTAPHIDIO
import NIOCore
import SecurityKeyDriver
import Synchronization
import Testing
import WebAuthn
import WebAuthnClient
import WebAuthnClientDriver

/// The engine's dialogs for tests: PINs from a script (nil: the person dismisses the prompt), the requests that
/// asked for them, and the first entry of every chooser.
final class PINScript: ClientUserInterface {
    private let answers: Mutex<[String?]>
    private let asked = Mutex<[PINRequest]>([])

    init(_ answers: [String?]) { self.answers = Mutex(answers) }

    var requests: [PINRequest] { asked.withLock { $0 } }

    func collectPIN(_ request: PINRequest) async -> String? {
        asked.withLock { $0.append(request) }
        return answers.withLock { $0.isEmpty ? nil : $0.removeFirst() }
    }

    func choose(_ prompt: ChoicePrompt) async -> Int? { prompt.choices.isEmpty ? nil : 0 }
    func confirm(_ question: ClientQuestion) async -> Bool { false }
    func notify(_ event: ClientEvent) async {}
}

/// The RP ID check of a browser for https://example.com, without the Public Suffix List.
struct ExampleOrigin: RelyingPartyIDChecker {
    func check(origin: String, requested: String?) async throws(ClientError) -> RelyingPartyIDDecision {
        guard origin == "https://example.com", requested ?? "example.com" == "example.com" else {
            throw ClientError(.relyingPartyIDRefused("\(origin) may not use \(requested ?? "its host")"))
        }
        return RelyingPartyIDDecision(origin: origin, relyingPartyID: "example.com")
    }
}

/// The WebAuthn engine's user verification and PIN flow against `passkey serve --udp` in process, through
/// `SecurityKeyAuthenticator`, as `passkey client --security-key` and `passkey debug security-key roundtrip` reach a
/// key: keys with a PIN and without built-in verification (`--pin-only`, like most hardware keys), both PIN/UV auth
/// protocols, CTAP 2.0's getPinToken, and every PIN error. The key's request log shows what was sent.
struct SecurityKeyPINTests {
    static let pin = "2468-pin"

    static func engine(_ key: TestKey, pins: PINScript) -> ClientEngine {
        var options = SecurityKeyOptions()
        // The limit only ends a failing test: the in-process key answers in milliseconds, except on a loaded machine.
        options.commandTimeout = .seconds(60)
        return ClientEngine(
            environment: ClientEnvironment(
                authenticators: [SecurityKeyAuthenticator(key.spec, options: options)], userInterface: pins,
                relyingPartyIDChecker: ExampleOrigin()))
    }

    /// navigator.credentials.create for alice at example.com.
    static func create(
        _ engine: ClientEngine, discoverable: Bool = true, userVerification: String = "required"
    ) async throws(ClientError) -> RegistrationCredential {
        let challenge = Ceremony.clientDataHash().base64URLEncodedString
        let options = try PublicKeyCredentialCreationOptions(
            json: Array(
                """
                {"rp":{"id":"example.com","name":"Example"},"user":{"id":"oRzg","name":"alice","displayName":"Alice"},
                 "challenge":"\(challenge)","pubKeyCredParams":[{"type":"public-key","alg":-7}],
                 "authenticatorSelection":{"residentKey":"\(discoverable ? "required" : "discouraged")",
                 "userVerification":"\(userVerification)"}}
                """.utf8))
        return try await engine.create(options, origin: "https://example.com")
    }

    /// navigator.credentials.get at example.com with `credential` allowed.
    static func get(
        _ engine: ClientEngine, credential: [UInt8], userVerification: String = "required"
    ) async throws(ClientError) -> AuthenticationCredential {
        let challenge = Ceremony.clientDataHash().base64URLEncodedString
        let options = try PublicKeyCredentialRequestOptions(
            json: Array(
                """
                {"rpId":"example.com","challenge":"\(challenge)","userVerification":"\(userVerification)",
                 "allowCredentials":[{"type":"public-key","id":"\(credential.base64URLEncodedString)"}]}
                """.utf8))
        return try await engine.get(options, origin: "https://example.com")
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
        let engine = Self.engine(server, pins: pins)
        let created = try await Self.create(engine)
        let signed = try await Self.get(engine, credential: created.id)
        #expect(try AuthenticatorData(bytes: created.authenticatorData).flags.contains([.userPresent, .userVerified]))
        #expect(try AuthenticatorData(bytes: signed.authenticatorData).flags.contains([.userPresent, .userVerified]))
        #expect(pins.requests.map(\.retriesLeft) == [8, 8])
        #expect(pins.requests.map(\.relyingPartyID) == ["example.com", "example.com"])
        #expect(
            pins.requests.map(\.key)
                == Array(repeating: "udp://127.0.0.1:\(server.server.localAddress.port ?? 0)", count: 2))
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
    }

    @Test func theProtocolTheKeyPrefersIsUsed() async throws {
        // The authenticator answers with the protocol it was asked for; a token of the other protocol would fail.
        for offer in [Offer.protocolTwo, .protocolOneOnly] {
            let server = try await TestKey.start(
                configuration: .pinOnlySecurityKey, pin: Self.pin, getInfo: offer.getInfo)
            let created = try await Self.create(Self.engine(server, pins: PINScript([Self.pin])))
            #expect(try AuthenticatorData(bytes: created.authenticatorData).flags.contains(.userVerified))
            await server.close()
        }
    }

    /// A wrong PIN: the person is asked again with the tries left and told it was wrong; dismissing that prompt ends
    /// the ceremony with nothing made. No error or request carries the PIN.
    @Test func aWrongPINIsAskedForAgainWithTheTriesLeft() async throws {
        let server = try await TestKey.start(configuration: .pinOnlySecurityKey, pin: Self.pin)
        defer { Task { await server.close() } }
        let wrong = "9999-wrong"
        let pins = PINScript([wrong])
        do {
            _ = try await Self.create(Self.engine(server, pins: pins))
            Issue.record("a wrong PIN made a credential")
        } catch {
            #expect(error == ClientError(.userCancelled))
            #expect(!"\(error)".contains(wrong) && !"\(error)".contains(Self.pin))
        }
        #expect(pins.requests.map(\.retriesLeft) == [8, 7])
        #expect(pins.requests.map(\.previousAttemptWasWrong) == [false, true])
        #expect(!server.log.contains { $0.hasPrefix("makeCredential") })
        #expect(!server.log.contains { $0.contains(wrong) })
    }

    @Test func theRightPINAfterAWrongOneRestoresTheCounter() async throws {
        let server = try await TestKey.start(configuration: .pinOnlySecurityKey, pin: Self.pin)
        defer { Task { await server.close() } }
        let pins = PINScript(["1111-wrong", Self.pin])
        _ = try await Self.create(Self.engine(server, pins: pins))
        #expect(pins.requests.map(\.retriesLeft) == [8, 7])
        #expect(pins.requests.map(\.previousAttemptWasWrong) == [false, true])
        #expect(try server.store.settings().pinRetries == 8)
    }

    @Test func theLastWrongTryBlocksThePIN() async throws {
        let server = try await TestKey.start(configuration: .pinOnlySecurityKey, pin: Self.pin, retries: 1)
        defer { Task { await server.close() } }
        let pins = PINScript(["0000-wrong", Self.pin])
        await #expect(throws: ClientError(.authenticator(.pinBlocked))) {
            try await Self.create(Self.engine(server, pins: pins))
        }
        #expect(pins.requests.map(\.retriesLeft) == [1])
        #expect("\(ClientError(.authenticator(.pinBlocked)))".contains("the PIN is blocked"))
    }

    @Test func aBlockedPINIsNotAskedFor() async throws {
        let server = try await TestKey.start(configuration: .pinOnlySecurityKey, pin: Self.pin, retries: 0)
        defer { Task { await server.close() } }
        let pins = PINScript([Self.pin])
        await #expect(throws: ClientError(.authenticator(.pinBlocked))) {
            try await Self.create(Self.engine(server, pins: pins))
        }
        #expect(pins.requests.isEmpty)
        #expect(!server.log.contains { $0.contains("Token") })
    }

    @Test func threeWrongPINsInARowNeedTheKeyPluggedInAgain() async throws {
        let server = try await TestKey.start(configuration: .pinOnlySecurityKey, pin: Self.pin)
        defer { Task { await server.close() } }
        let pins = PINScript(["1111-wrong", "2222-wrong", "3333-wrong", Self.pin])
        await #expect(throws: ClientError(.authenticator(.pinAuthBlocked))) {
            try await Self.create(Self.engine(server, pins: pins))
        }
        #expect(pins.requests.map(\.retriesLeft) == [8, 7, 6])
    }

    @Test func verificationWithoutAPINSetIsRefusedBeforeTheKeyIsAsked() async throws {
        let server = try await TestKey.start(configuration: .pinOnlySecurityKey)
        defer { Task { await server.close() } }
        let pins = PINScript([Self.pin])
        let engine = Self.engine(server, pins: pins)
        await #expect(throws: ClientError(.userVerificationUnavailable)) {
            try await Self.create(engine)
        }
        #expect(server.log == ["getInfo -> OK"])
        #expect(pins.requests.isEmpty)
        // Without user verification asked for, the key makes the credential with user presence alone.
        let created = try await Self.create(engine, userVerification: "discouraged")
        #expect(!(try AuthenticatorData(bytes: created.authenticatorData).flags.contains(.userVerified)))
    }

    /// A PIN no key can have (under 4 code points, over 63 bytes) is asked for again without costing a try; a
    /// dismissed prompt ends the ceremony. Neither reaches the key.
    @Test(arguments: [nil, "12", String(repeating: "7", count: 64)] as [String?])
    func noPINOrAnImpossibleOneSendsNothing(pin: String?) async throws {
        let server = try await TestKey.start(configuration: .pinOnlySecurityKey, pin: Self.pin)
        defer { Task { await server.close() } }
        let pins = PINScript([pin])
        await #expect(throws: ClientError(.userCancelled)) {
            try await Self.create(Self.engine(server, pins: pins))
        }
        #expect(pins.requests.map(\.previousAttemptWasWrong) == (pin == nil ? [false] : [false, true]))
        #expect(pins.requests.map(\.retriesLeft) == (pin == nil ? [8] : [8, 8]))
        #expect(!server.log.contains { $0.contains("Token") || $0.contains("getKeyAgreement") })
        #expect(try server.store.settings().pinRetries == 8)
    }

    /// The default security key verifies users itself (the store passphrase) but, once a PIN is set, wants a token
    /// for a discoverable credential sent without `uv`, as libfido2 sends it for ssh-keygen. The engine sends `uv`
    /// to a key that verifies users itself, so neither CTAP2_ERR_PUAT_REQUIRED nor a PIN prompt comes up (the
    /// engine's answer to PUAT_REQUIRED, the PIN and the request again, is `ResponseCheckTests`').
    @Test func aKeyThatVerifiesUsersItselfIsNotAskedForAToken() async throws {
        let server = try await TestKey.start(configuration: .securityKey, pin: Self.pin)
        defer { Task { await server.close() } }
        let pins = PINScript([Self.pin])
        _ = try await Self.create(Self.engine(server, pins: pins), userVerification: "discouraged")
        #expect(pins.requests.isEmpty)
        #expect(
            server.log == ["getInfo -> OK", "makeCredential options {rk: true, uv: true} pinUvAuthParam: absent -> OK"])
    }

    @Test func aDiscoverableCredentialOnAPINOnlyKeyGetsATokenUpFront() async throws {
        let server = try await TestKey.start(configuration: .pinOnlySecurityKey, pin: Self.pin)
        defer { Task { await server.close() } }
        let pins = PINScript([Self.pin])
        let engine = Self.engine(server, pins: pins)
        _ = try await Self.create(engine, userVerification: "discouraged")
        #expect(!server.log.contains { $0.contains("PUAT_REQUIRED") })
        #expect(server.log.last == "makeCredential options {rk: true} pinUvAuthParam: present -> OK")
        // A non-discoverable one does not need it (makeCredUvNotRqd).
        _ = try await Self.create(engine, discoverable: false, userVerification: "discouraged")
        #expect(server.log.last == "makeCredential options {} pinUvAuthParam: absent -> OK")
        #expect(pins.requests.count == 1)
    }

    /// `SecurityKey` itself sends every request as it is: one signed with a token the key never issued is refused
    /// by the key, and nothing about a PIN is sent on its own.
    @Test func theKeySendsEveryRequestAsItIs() async throws {
        let server = try await TestKey.start(configuration: .pinOnlySecurityKey, pin: Self.pin)
        defer { Task { await server.close() } }
        var options = SecurityKeyOptions()
        options.commandTimeout = .seconds(60)
        let key = try await SecurityKey.open(server.spec, options: options)
        var parameters = try #require(
            try CBORValue(
                decoding: Array(
                    Ceremony.makeCredential(Ceremony.clientDataHash(), userVerification: false).dropFirst())
            ).mapValue)
        parameters[8] = .bytes([UInt8](repeating: 1, count: 32))
        parameters[9] = 2
        let response = try await key.send(ctapCommand: [0x01] + CBORValue.map(parameters).encoded())
        #expect(response == [CTAPError.pinAuthInvalid.rawValue])
        // `uv` to a key without built-in verification: the key's own answer comes back.
        let unsigned = try await key.send(ctapCommand: Ceremony.makeCredential(Ceremony.clientDataHash()))
        #expect(unsigned.first != 0)
        #expect(!server.log.contains { $0.hasPrefix("clientPIN") })
        await key.close()
    }
}
