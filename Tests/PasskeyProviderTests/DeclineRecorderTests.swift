import CTAP2
import PasskeyProvider
import Testing

/// `passkey scan` ends with the declined status when the person declined a request (issue 24, item 5: "scan exits 0
/// after the person declines"): the recorder passes each answer through and remembers a no.
struct DeclineRecorderTests {
    struct Answering: UserInteraction {
        let results: [ConsentResult]
        let index = Counter()
        final class Counter: @unchecked Sendable { var value = 0 }

        func requestConsent(_ request: ConsentRequest) async -> ConsentResult {
            defer { index.value += 1 }
            return results[index.value]
        }
    }

    static let request = ConsentRequest(
        action: .getAssertion(relyingPartyID: "example.com", accounts: [], chooseOnAuthenticator: false),
        requiresPresence: true, requiresVerification: false)

    @Test(arguments: [
        ([ConsentResult.approved(userVerified: false, selectedAccount: nil)], false),
        ([.approved(userVerified: false, selectedAccount: nil), .denied], true),
        ([.verificationFailed], true),
        ([.timedOut], true),
        ([.cancelled], false),
    ])
    func aNoIsRemembered(results: [ConsentResult], declined: Bool) async {
        let recorder = DeclineRecorder(Answering(results: results))
        #expect(!recorder.declined)
        for expected in results {
            #expect(await recorder.requestConsent(Self.request) == expected)
        }
        #expect(recorder.declined == declined)
    }
}
