import CTAP2
import Synchronization

/// A consent that remembers whether the person declined: said no, failed verification or did not answer in time.
/// A command that answers requests for a person (`passkey scan`) ends with the declined status
/// (`ExitStatus.declined`) when they did, since declining is not success.
public final class DeclineRecorder: UserInteraction, Sendable {
    private let consent: any UserInteraction
    private let declines = Atomic<Int>(0)

    public init(_ consent: any UserInteraction) {
        self.consent = consent
    }

    /// Whether any request was declined.
    public var declined: Bool { declines.load(ordering: .relaxed) > 0 }

    public func requestConsent(_ request: ConsentRequest) async -> ConsentResult {
        let result = await consent.requestConsent(request)
        switch result {
        case .approved: break
        case .denied, .verificationFailed, .timedOut: declines.add(1, ordering: .relaxed)
        case .cancelled: break
        }
        return result
    }
}
