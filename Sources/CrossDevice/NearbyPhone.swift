import CTAP2
import Hybrid
import HybridDriver
import RelyingParty

extension CrossDeviceClient {
    /// Runs `body` with `phone` in radio range: the phone scans each QR code this client shows, after
    /// `scanDelay`, and serves it with `authenticator`. For the demo, tests and benchmarks, where both devices live in one process.
    ///
    /// The phone's own failures go to `phoneFailed`; the ceremony's outcome is `body`'s.
    public func withNearbyPhone<T: Sendable>(
        _ phone: HybridAuthenticatorLink,
        authenticator: Authenticator,
        scanDelay: Duration = .zero,
        phoneFailed: @escaping @Sendable (any Error) -> Void = { _ in },
        state: inout RelyingPartyState,
        _ body: (CrossDeviceClient, inout RelyingPartyState) async throws(CrossDeviceError) -> T
    ) async throws(CrossDeviceError) -> T {
        let (qrCodes, qrSink) = AsyncStream.makeStream(of: String.self)
        var client = self
        let original = progress
        client.progress = { event in
            if case .hybrid(.showQRCode(let url)) = event { qrSink.yield(url) }
            original(event)
        }
        let phoneTask = Task {
            for await url in qrCodes {
                if scanDelay > .zero { try? await Task.sleep(for: scanDelay) }
                do {
                    _ = try await phone.serve(qrCode: try QRCodePayload(url: url), authenticator: authenticator)
                } catch {
                    phoneFailed(error)
                }
            }
        }
        let result: Result<T, CrossDeviceError>
        do throws(CrossDeviceError) {
            result = .success(try await body(client, &state))
        } catch {
            result = .failure(error)
        }
        qrSink.finish()
        await phoneTask.value
        return try result.get()
    }
}
