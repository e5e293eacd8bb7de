import CBOR
import CTAP2
import Foundation
import JSON
import Synchronization
import WebAuthnClient

/// The WebAuthn client's other input: what an authenticator it does not control answers. A hostile phone or security
/// key writes the getInfo and every response; the engine must end with a credential or a `ClientError`, never trap or
/// hang, and a credential it returns must serialize to JSON that parses.
enum ClientResponsesTarget {
    static let clientResponses: FuzzTarget = FuzzTarget(
        name: "client-responses",
        summary: "an authenticator's getInfo and answers to the WebAuthn engine: a credential or a one-line error",
        seeds: {
            var seeds: [[UInt8]] = []
            for selector: UInt8 in [0, 1, 2, 5, 0x10, 0x11, 0x81, 0x82, 0x84, 0x90] {
                seeds.append([selector] + FuzzInput.chunks(recordedAnswers(selector: selector)))
            }
            return seeds
        },
        run: { input in
            var reader = FuzzInput(input)
            let selector = reader.byte() ?? 0
            var parts: [[UInt8]] = []
            while let chunk = reader.chunk() { parts.append(chunk) }
            let scripted = Scripted(parts: parts)
            let outcome = runBlocking { await ceremony(selector: selector, authenticator: scripted) }
            switch outcome {
            case .success(let json):
                expect((try? JSONValue(parsing: json)) != nil, "a credential's JSON does not parse")
            case .failure(let error):
                expect(!error.description.contains("\n"), "an error description spans lines")
                expect((10...17).contains(error.exitStatus), "an error's exit status is outside 10–17")
            }
        })

    /// The kind of authenticator, by the selector's low two bits.
    private static func kind(_ selector: UInt8) -> AuthenticatorKind {
        [.securityKey, .hybrid, .platform, .securityKey][Int(selector & 3)]
    }

    /// Runs create (selector bit 7 clear) or get (set), with user verification required (bit 2) or preferred, an
    /// allow list (bit 3) for get, and for create EdDSA, ES256 and RS256 offered (bit 4; ES256 alone otherwise), so
    /// that the recorded answers carry OKP keys and mutations reach the RSA shape too.
    private static func ceremony(selector: UInt8, authenticator: any ClientAuthenticator) async -> Result<
        [UInt8], ClientError
    > {
        let random = SeededBytes(seed: selector)
        let engine = ClientEngine(
            environment: ClientEnvironment(
                authenticators: [authenticator], userInterface: FirstChoice(),
                relyingPartyIDChecker: SameHost(), randomBytes: { random.bytes($0) }))
        let verification = selector & 4 == 0 ? "preferred" : "required"
        do throws(ClientError) {
            if selector & 0x80 == 0 {
                let options = try PublicKeyCredentialCreationOptions(
                    json: Array(
                        (#"{"rp":{"id":"example.com","name":"E"},"user":{"id":"AQID","name":"a","displayName":"A"},"#
                            + #""challenge":"AAECAw","pubKeyCredParams":"#
                            + (selector & 0x10 == 0
                                ? #"[{"type":"public-key","alg":-7}],"#
                                : #"[{"type":"public-key","alg":-8},{"type":"public-key","alg":-7},"#
                                    + #"{"type":"public-key","alg":-257}],"#)
                            + #""authenticatorSelection":{"residentKey":"preferred","userVerification":""#
                            + verification + #""},"extensions":{"credProps":true}}"#).utf8))
                return .success(try await engine.create(options, origin: "https://example.com").json())
            }
            let allow = selector & 8 == 0 ? "" : #","allowCredentials":[{"type":"public-key","id":"AQIDBA"}]"#
            let options = try PublicKeyCredentialRequestOptions(
                json: Array(
                    (#"{"challenge":"AAECAw","rpId":"example.com","userVerification":""# + verification + "\""
                        + allow + "}").utf8))
            return .success(try await engine.get(options, origin: "https://example.com").json())
        } catch {
            return .failure(error)
        }
    }

    /// What this package's own authenticator answers in the ceremony `selector` names: getInfo, then each answer.
    private static func recordedAnswers(selector: UInt8) -> [[UInt8]] {
        runBlocking {
            let store = InMemoryCredentialStore()
            let random = SeededBytes(seed: 0xA5)
            let authenticator = Authenticator(
                configuration: .securityKey,
                environment: AuthenticatorEnvironment(
                    store: store, userInteraction: UnattendedApproval(), randomBytes: { random.bytes($0) }))
            let local = InProcessAuthenticator(authenticator, store: store, kind: kind(selector), transports: [.usb])
            if selector & 0x80 != 0 {
                _ = await ceremony(selector: selector & 0x10, authenticator: local)
            }
            let recorder = Recorder(base: local)
            _ = await ceremony(selector: selector, authenticator: recorder)
            let info = (try? await authenticator.info().encoded()) ?? []
            return [info] + recorder.answers.withLock { $0 }
        }
    }

    /// Passes messages to `base` and keeps getInfo and every answer.
    private final class Recorder: ClientAuthenticator {
        let base: any ClientAuthenticator
        let answers = Mutex<[[UInt8]]>([])
        var kind: AuthenticatorKind { base.kind }
        var transports: [AuthenticatorTransport] { base.transports }

        init(base: any ClientAuthenticator) { self.base = base }

        func credentials(forRelyingParty relyingPartyID: String) async -> [CredentialMetadata]? { nil }

        func open(for ceremony: ClientCeremony) async throws(AuthenticatorTransportError) -> any AuthenticatorSession {
            let session = try await base.open(for: ceremony)
            return Passing(info: session.info, base: session) { [self] answer in
                self.answers.withLock { $0.append(answer) }
            }
        }

        private struct Passing: AuthenticatorSession {
            let info: AuthenticatorInfo
            let base: any AuthenticatorSession
            let record: @Sendable ([UInt8]) -> Void

            func send(_ message: [UInt8]) async throws(AuthenticatorTransportError) -> [UInt8] {
                let answer = try await base.send(message)
                record(answer)
                return answer
            }

            func close() async {}
        }
    }

    /// An authenticator that answers from the fuzz input: the first part is its getInfo (CBOR), the rest its answers in
    /// order; when they run out, the connection is gone.
    private struct Scripted: ClientAuthenticator {
        let parts: [[UInt8]]
        var kind: AuthenticatorKind { .securityKey }
        var transports: [AuthenticatorTransport] { [.usb] }

        func credentials(forRelyingParty relyingPartyID: String) async -> [CredentialMetadata]? { nil }

        func open(for ceremony: ClientCeremony) async throws(AuthenticatorTransportError) -> any AuthenticatorSession {
            guard let first = parts.first,
                let info = try? AuthenticatorInfo(cbor: CBORDecoder(requiresCanonicalForm: false).decode(first[...]))
            else { throw AuthenticatorTransportError("no getInfo") }
            return Session(info: info, answers: Mutex(Array(parts.dropFirst())))
        }

        private final class Session: AuthenticatorSession {
            let info: AuthenticatorInfo
            let answers: Mutex<[[UInt8]]>

            init(info: AuthenticatorInfo, answers: consuming Mutex<[[UInt8]]>) {
                self.info = info
                self.answers = answers
            }

            func send(_ message: [UInt8]) async throws(AuthenticatorTransportError) -> [UInt8] {
                guard let next = answers.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else {
                    throw AuthenticatorTransportError("closed")
                }
                return next
            }

            func close() async {}
        }
    }

    private struct SameHost: RelyingPartyIDChecker {
        func check(origin: String, requested: String?) async throws(ClientError) -> RelyingPartyIDDecision {
            RelyingPartyIDDecision(origin: origin, relyingPartyID: requested ?? "example.com")
        }
    }

    private struct FirstChoice: ClientUserInterface {
        func choose(_ prompt: ChoicePrompt) async -> Int? { 0 }
        func confirm(_ question: ClientQuestion) async -> Bool { true }
        func collectPIN(_ request: PINRequest) async -> String? { "1234" }
        func notify(_ event: ClientEvent) async {}
    }
}
