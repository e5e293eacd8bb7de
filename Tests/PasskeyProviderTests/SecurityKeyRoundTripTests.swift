import Basics
import CTAP2
import Crypto
import JSON
import PasskeyProvider
import Synchronization
import RelyingPartyTestSupport
import Testing
import WebAuthn
import WebAuthnClient

/// `passkey debug security-key roundtrip` in process: the WebAuthn engine's PIN flow against this package's CTAP2
/// authenticator as a key without built-in verification whose PIN is 1234.
struct SecurityKeyRoundTripTests {
    /// The PINs given, in order, and the requests that asked for them.
    final class PINs: Sendable {
        private let state: Mutex<(answers: [String], asked: [PINRequest])>
        init(_ answers: [String]) { state = Mutex((answers, [])) }

        var asked: [PINRequest] { state.withLock { $0.asked } }

        func next(_ request: PINRequest) -> String? {
            state.withLock { state in
                state.asked.append(request)
                return state.answers.isEmpty ? nil : state.answers.removeFirst()
            }
        }
    }

    struct Key {
        let store: InMemoryCredentialStore

        /// With `pin`, the PIN is 1234; without, none is set.
        init(pin: Bool = true) {
            store =
                pin
                ? InMemoryCredentialStore(
                    settings: AuthenticatorSettings(
                        pinHash: Array(SHA256.hash(data: Array("1234".utf8)).prefix(16)), pinCodePointCount: 4))
                : InMemoryCredentialStore()
        }

        var client: InProcessAuthenticator {
            InProcessAuthenticator(
                Authenticator(
                    configuration: .pinOnlySecurityKey,
                    environment: AuthenticatorEnvironment(store: store, userInteraction: UnattendedApproval())),
                kind: .securityKey, transports: [.usb], listing: nil)
        }
    }

    static func run(
        _ key: Key, pins: PINs, userVerification: Bool, attempts: Int = 1,
        onRegistered: (_ credentialID: [UInt8], _ format: String, _ flags: AuthenticatorFlags) -> Void = { _, _, _ in }
    ) async throws -> SecurityKeyRoundTrip.Outcome {
        try await SecurityKeyRoundTrip(
            relyingPartyID: "example.com", userName: "alice", userVerification: userVerification, discoverable: true
        ).run(
            on: key.client, pin: { pins.next($0) }, pinAttempts: attempts,
            checker: HostRelyingPartyIDChecker(), random: AuthenticatorEnvironment.systemRandomBytes,
            onRegistered: onRegistered)
    }

    @Test func withUserVerificationEachCeremonyTakesAPINToken() async throws {
        let key = Key()
        let pins = PINs(["1234", "1234"])
        var registered: [(id: [UInt8], format: String, flags: AuthenticatorFlags)] = []
        let outcome = try await Self.run(key, pins: pins, userVerification: true) {
            registered.append(($0, $1, $2))
        }
        #expect(registered.map(\.id) == [outcome.registration.id])
        #expect(registered.map(\.format) == ["packed"])
        #expect(registered.map(\.flags) == [outcome.registrationFlags])
        #expect(outcome.userVerified)
        #expect(outcome.registrationFlags.contains([.userPresent, .userVerified]))
        #expect(outcome.attestationFormat == "packed")
        #expect(outcome.origin == "https://example.com")
        #expect(outcome.authentication.id == outcome.registration.id)
        #expect(pins.asked == Array(repeating: PINRequest(relyingPartyID: "example.com", retriesLeft: 8), count: 2))
        #expect(try key.store.allCredentials().map(\.id) == [outcome.registration.id])

        // `--json`: what a relying party receives, every byte string in base64url, keys sorted.
        let json = try JSONValue(parsing: outcome.json(relyingPartyID: "example.com"))
        guard case .object(let members) = json else {
            Issue.record("the round trip's JSON is \(json.typeName), not an object")
            return
        }
        #expect(
            members.map(\.key) == ["authentication", "credentialId", "origin", "registration", "rpId", "userVerified"])
        #expect(json["rpId"] == .string("example.com"))
        #expect(json["origin"] == .string("https://example.com"))
        #expect(json["credentialId"] == .string(outcome.registration.id.base64URLEncodedString))
        #expect(json["userVerified"] == .bool(true))
        #expect(
            json["registration"]?["attestationObject"]
                == .string(outcome.registration.attestationObject.base64URLEncodedString))
        #expect(json["registration"]?["challenge"] == .string(outcome.registrationChallenge.base64URLEncodedString))
        #expect(
            json["authentication"]?["signature"] == .string(outcome.authentication.signature.base64URLEncodedString))
        #expect(
            json["authentication"]?["authenticatorData"]
                == .string(outcome.authentication.authenticatorData.base64URLEncodedString))
        #expect(
            json["authentication"]?["challenge"] == .string(outcome.authenticationChallenge.base64URLEncodedString))
        #expect(
            json["authentication"]?["clientDataJSON"]
                == .string(outcome.authentication.clientDataJSON.base64URLEncodedString))
    }

    /// A key without a PIN, and no user verification asked for: presence only.
    @Test func withoutUserVerificationNoPINIsAskedFor() async throws {
        let pins = PINs([])
        let outcome = try await Self.run(Key(pin: false), pins: pins, userVerification: false)
        #expect(!outcome.userVerified)
        #expect(outcome.authenticationFlags.contains(.userPresent))
        #expect(!outcome.registrationFlags.contains(.userVerified))
        #expect(pins.asked.isEmpty)
    }

    /// A wrong PIN from a source that gives one PIN only: the error names the tries left, one try was spent, and
    /// nothing was made.
    @Test func aWrongPINSaysHowManyTriesAreLeft() async throws {
        let key = Key()
        let pins = PINs(["0000"])
        await #expect(throws: ProviderError("wrong PIN: 7 tries left")) {
            try await Self.run(key, pins: pins, userVerification: true)
        }
        #expect(pins.asked == [PINRequest(relyingPartyID: "example.com", retriesLeft: 8)])
        #expect(try key.store.allCredentials().isEmpty)
        #expect(try key.store.settings().pinRetries == 7)
    }

    /// With three attempts (the terminal) a wrong PIN is asked for again; a fourth prompt is never shown.
    @Test func theTerminalGetsThreeAttemptsForEachToken() async throws {
        let key = Key()
        let again = PINs(["0000", "1234", "1234"])
        #expect(try await Self.run(key, pins: again, userVerification: true, attempts: 3).userVerified)
        #expect(again.asked.map(\.previousAttemptWasWrong) == [false, true, false])
        // Three wrong PINs in a row: the key refuses the third (power cycle needed), and no fourth prompt is shown.
        let wrong = PINs(["0001", "0002", "0003", "1234"])
        await #expect(throws: ClientError(.authenticator(.pinAuthBlocked))) {
            try await Self.run(Key(), pins: wrong, userVerification: true, attempts: 3)
        }
        #expect(wrong.asked.count == 3)
    }

    /// A PIN prompt dismissed without a wrong PIN before it is the engine's cancellation, as it stands.
    @Test func aDismissedPromptIsTheEnginesCancellation() async throws {
        await #expect(throws: ClientError(.userCancelled)) {
            try await Self.run(Key(), pins: PINs([]), userVerification: true)
        }
    }
}
