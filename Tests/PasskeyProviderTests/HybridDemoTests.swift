import Foundation
import PasskeyProvider
import RelyingPartyTestSupport
import Synchronization
import TestSupport
import Testing
import WebAuthnClient

/// `passkey demo` in process: its three acts against the real relay, the simulated radio and the engine.
struct HybridDemoTests {
    /// The person: asked nothing (the demo approves itself), told everything.
    final class Person: ProviderUserInterface {
        let events = Mutex<[ProviderEvent]>([])
        func confirm(_ question: ProviderQuestion) async -> PromptAnswer<Bool> { .declined }
        func choose(_ request: ChoiceRequest) async -> PromptAnswer<Int> { .declined }
        func secret(_ request: SecretRequest) async -> PromptAnswer<String> { .declined }
        func report(_ event: ProviderEvent) { events.withLock { $0.append(event) } }
    }

    @Test func registersSignsInAndFailsWithoutTheAdvert() async throws {
        let scratch = try TemporaryDirectory()
        defer { scratch.remove() }
        let person = Person()
        let lines = Mutex<[HybridDemo.Line]>([])
        let codes = Mutex<[String]>([])
        let outcome = try await HybridDemo(
            relyingPartyID: "example.com", userName: "alice", farAwayTimeout: .seconds(1)
        )
        .run(
            in: scratch.url, person: person, checker: HostRelyingPartyIDChecker(),
            tell: { line in lines.withLock { $0.append(line) } },
            showQRCode: { url in codes.withLock { $0.append(url) } })

        #expect(outcome.signedInUser == "alice")
        #expect(outcome.userVerified)
        #expect(outcome.registeredCredentialID.count >= 16)
        #expect(outcome.farAwayError.name == .notAllowedError)
        // Two tunnels paired (registration and sign-in); the far-away attempt never reached the relay.
        #expect(outcome.relayCounters.contains("relay_tunnels_paired_total 2"))

        let told = lines.withLock { $0 }
        let acts = told.compactMap { line -> String? in if case .act(let title) = line { title } else { nil } }
        #expect(acts.map { $0.prefix(2) } == ["1.", "2.", "3."])
        let steps = told.compactMap { line -> String? in if case .step(let text) = line { text } else { nil } }
        // Each successful ceremony: the QR code, the advert, the tunnel, the handshake, a request, its answer.
        #expect(steps.filter { $0.hasPrefix("computer: advert decrypted") }.count == 2)
        #expect(steps.filter { $0.hasPrefix("phone: request makeCredential") }.count == 1)
        #expect(steps.filter { $0.hasPrefix("phone: request getAssertion") }.count == 1)
        #expect(steps.contains { $0.hasPrefix("signed in as alice: signature verified") })
        #expect(steps.last?.hasPrefix("relay saw only ciphertext: relay_bytes_relayed_total") == true)
        // Only the first ceremony's QR code is drawn; every one is shown as a step.
        #expect(codes.withLock { $0 }.count == 1)
        #expect(codes.withLock { $0 }.allSatisfy { $0.hasPrefix("FIDO:/") })
        #expect(steps.filter { $0.hasPrefix("computer: QR code shown: FIDO:/") }.count == 3)

        // The phone's approvals were its own, and reported: one for each ceremony that reached it.
        let approvals = person.events.withLock { $0 }.filter { if case .autoApproved = $0 { true } else { false } }
        #expect(approvals.count == 2)
        // The scratch directory is left empty: the throw-away store is gone.
        #expect(scratch.listing().isEmpty)
    }
}
