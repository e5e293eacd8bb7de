import Basics
import CTAP2
import Crypto
import JSON
import Synchronization
import WebAuthn
import WebAuthnClient

/// Where a security key's PIN comes from: the terminal without echo, or the environment; `nil` when there is none.
public typealias PINSource = @Sendable (PINRequest) async -> String?

/// `passkey debug security-key roundtrip`: a passkey made on a security key and used at once, through the WebAuthn
/// engine a person's `passkey client` uses (its user verification, its PIN flow), then checked as a relying party
/// checks it: the assertion's signature with the registered public key, the RP ID hash, and the UV flags when user
/// verification was required.
public struct SecurityKeyRoundTrip: Sendable {
    public var relyingPartyID: String
    public var userName: String
    /// Require user verification (the key's own, or its PIN).
    public var userVerification: Bool
    /// Make a discoverable credential.
    public var discoverable: Bool

    public init(relyingPartyID: String, userName: String, userVerification: Bool, discoverable: Bool) {
        self.relyingPartyID = relyingPartyID
        self.userName = userName
        self.userVerification = userVerification
        self.discoverable = discoverable
    }

    /// Both ceremonies' results, as a relying party receives them.
    public struct Outcome: Sendable {
        public var origin: String
        public var registration: RegistrationCredential
        public var registrationChallenge: [UInt8]
        public var authentication: AuthenticationCredential
        public var authenticationChallenge: [UInt8]
        public var attestationFormat: String
        public var registrationFlags: AuthenticatorFlags
        public var authenticationFlags: AuthenticatorFlags
        public var userVerified: Bool { authenticationFlags.contains(.userVerified) }

        /// What a relying party receives from both ceremonies, for checking elsewhere: one JSON object with sorted
        /// keys, `rpId`, `origin`, `credentialId`, `registration` and `authentication` (their bytes and challenges in
        /// base64url) and `userVerified`.
        public func json(relyingPartyID: String) -> [UInt8] {
            JSONValue.sortedObject([
                "rpId": .string(relyingPartyID), "origin": .string(origin),
                "credentialId": .string(registration.id.base64URLEncodedString),
                "registration": .sortedObject([
                    "clientDataJSON": .string(registration.clientDataJSON.base64URLEncodedString),
                    "attestationObject": .string(registration.attestationObject.base64URLEncodedString),
                    "challenge": .string(registrationChallenge.base64URLEncodedString),
                ]),
                "authentication": .sortedObject([
                    "clientDataJSON": .string(authentication.clientDataJSON.base64URLEncodedString),
                    "authenticatorData": .string(authentication.authenticatorData.base64URLEncodedString),
                    "signature": .string(authentication.signature.base64URLEncodedString),
                    "challenge": .string(authenticationChallenge.base64URLEncodedString),
                ]),
                "userVerified": .bool(userVerified),
            ]).serialized()
        }
    }

    /// The origin the ceremonies run for: `https://` and the RP ID.
    public var origin: String { "https://\(relyingPartyID)" }

    /// Runs both ceremonies on `key`. The PIN, when the key needs one, comes from `pin` (asked again after a wrong
    /// one, at most `pinAttempts` times for each token); `nil` from it ends the round trip. `checker` is the engine's RP ID
    /// check; `random` gives the challenges; `onRegistered` hears of the credential between the two ceremonies.
    ///
    /// - Throws: ``ProviderError`` when the PIN was wrong (with the tries left) or the answers do not verify;
    ///   the engine's `ClientError` otherwise.
    public func run(
        on key: any ClientAuthenticator, pin: @escaping PINSource, pinAttempts: Int,
        checker: any RelyingPartyIDChecker, random: @escaping @Sendable (Int) -> [UInt8],
        onRegistered: (_ credentialID: [UInt8], _ format: String, _ flags: AuthenticatorFlags) -> Void = { _, _, _ in }
    ) async throws -> Outcome {
        let interface = PINOnly(pin: pin, attempts: pinAttempts)
        let engine = ClientEngine(
            environment: ClientEnvironment(
                authenticators: [key], userInterface: interface, relyingPartyIDChecker: checker, randomBytes: random))
        let requirement = userVerification ? "required" : "discouraged"
        do {
            let creation = try PublicKeyCredentialCreationOptions(
                jsonValue: .object([
                    JSONMember(
                        "rp",
                        .object([
                            JSONMember("id", .string(relyingPartyID)), JSONMember("name", .string(relyingPartyID)),
                        ])),
                    JSONMember(
                        "user",
                        .object([
                            JSONMember("id", .string(random(16).base64URLEncodedString)),
                            JSONMember("name", .string(userName)), JSONMember("displayName", .string(userName)),
                        ])),
                    JSONMember("challenge", .string(random(32).base64URLEncodedString)),
                    JSONMember(
                        "pubKeyCredParams",
                        .array([.object([JSONMember("type", .string("public-key")), JSONMember("alg", .number(-7))])])),
                    // The key's own attestation, to show what it is.
                    JSONMember("attestation", .string("direct")),
                    JSONMember(
                        "authenticatorSelection",
                        .object([
                            JSONMember("residentKey", .string(discoverable ? "required" : "discouraged")),
                            JSONMember("userVerification", .string(requirement)),
                        ])),
                ]))
            let registration = try await engine.create(creation, origin: origin)
            let attestation = try AttestationObject(bytes: registration.attestationObject)
            guard let credential = attestation.authenticatorData.attestedCredentialData else {
                throw ProviderError("the security key made no credential")
            }
            onRegistered(registration.id, attestation.format, attestation.authenticatorData.flags)
            let request = try PublicKeyCredentialRequestOptions(
                jsonValue: .object([
                    JSONMember("rpId", .string(relyingPartyID)),
                    JSONMember("challenge", .string(random(32).base64URLEncodedString)),
                    JSONMember(
                        "allowCredentials",
                        .array([
                            .object([
                                JSONMember("type", .string("public-key")),
                                JSONMember("id", .string(registration.id.base64URLEncodedString)),
                            ])
                        ])),
                    JSONMember("userVerification", .string(requirement)),
                ]))
            let authentication = try await engine.get(request, origin: origin)
            let signed = try AuthenticatorData(bytes: authentication.authenticatorData)
            let clientDataHash = Array(SHA256.hash(data: authentication.clientDataJSON))
            guard authentication.id == registration.id,
                signed.relyingPartyIDHash == Array(SHA256.hash(data: Array(relyingPartyID.utf8))),
                credential.publicKey.isValidSignature(
                    authentication.signature, for: authentication.authenticatorData + clientDataHash)
            else { throw ProviderError("the assertion does not verify with the registered credential") }
            let outcome = Outcome(
                origin: origin, registration: registration, registrationChallenge: creation.challenge,
                authentication: authentication, authenticationChallenge: request.challenge,
                attestationFormat: attestation.format, registrationFlags: attestation.authenticatorData.flags,
                authenticationFlags: signed.flags)
            if userVerification,
                !(outcome.registrationFlags.contains(.userVerified)
                    && outcome.authenticationFlags.contains(.userVerified))
            {
                throw ProviderError("user verification was required, but the key did not set the UV flag")
            }
            return outcome
        } catch let error as ClientError where error.reason == .userCancelled {
            throw interface.whyDeclined.map { ProviderError($0) } ?? error
        }
    }

    /// The engine's dialogs with one authenticator and nobody to choose: the PIN, and yes to showing the key's
    /// attestation.
    private final class PINOnly: ClientUserInterface {
        let pin: PINSource
        let attempts: Int
        private let state = Mutex<(asked: Int, declined: String?)>((0, nil))

        init(pin: @escaping PINSource, attempts: Int) {
            self.pin = pin
            self.attempts = attempts
        }

        /// Why the PIN prompt ended the ceremony: the last wrong PIN and the tries it left.
        var whyDeclined: String? { state.withLock { $0.declined } }

        func choose(_ prompt: ChoicePrompt) async -> Int? { prompt.choices.isEmpty ? nil : 0 }
        /// The person ran the round trip to see the key: its make and model may be revealed.
        func confirm(_ question: ClientQuestion) async -> Bool { true }
        func notify(_ event: ClientEvent) async {}

        func collectPIN(_ request: PINRequest) async -> String? {
            // Attempts count from the first prompt of each token: a ceremony's first prompt starts again at one.
            let asked = state.withLock { state in
                state.asked = request.previousAttemptWasWrong ? state.asked + 1 : 1
                return state.asked
            }
            let answer = asked <= attempts ? await pin(request) : nil
            if answer == nil, request.previousAttemptWasWrong {
                let retries = request.retriesLeft
                state.withLock {
                    $0.declined =
                        switch retries {
                        case 1: "wrong PIN: 1 try left; one more wrong PIN blocks the PIN until the key is reset"
                        case let retries?: "wrong PIN: \(retries) tries left"
                        case nil: "wrong PIN"
                        }
                }
            }
            return answer
        }
    }
}
