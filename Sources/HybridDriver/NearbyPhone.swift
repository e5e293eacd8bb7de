import CTAP2
import Hybrid
import Proximity

/// A phone in radio range of a computer that lives in the same process: it scans each QR code the computer shows
/// (after `scanDelay`) and serves it with `authenticator` through `link`. For the demo, the benchmarks and the
/// tests, where both devices run together; a real phone is `passkey scan`.
public struct NearbyPhone: Sendable {
    public var link: HybridAuthenticatorLink
    public var authenticator: Authenticator
    /// How long the person takes to point the camera at the code.
    public var scanDelay: Duration
    /// The phone's own failures (the computer sees only that no phone came, or that the tunnel broke).
    public var onFailure: @Sendable (any Error) -> Void

    public init(
        link: HybridAuthenticatorLink, authenticator: Authenticator, scanDelay: Duration = .zero,
        onFailure: @escaping @Sendable (any Error) -> Void = { _ in }
    ) {
        self.link = link
        self.authenticator = authenticator
        self.scanDelay = scanDelay
        self.onFailure = onFailure
    }

    /// Runs `body` while the phone watches the computer's screen: `body` passes `show` to the computer, which calls
    /// it with each QR code it shows. Returns `body`'s result once every session the phone started has ended.
    public func watching<T: Sendable>(
        _ body: (_ show: @escaping @Sendable (String) -> Void) async throws -> T
    ) async throws -> T {
        let (qrCodes, screen) = AsyncStream.makeStream(of: String.self)
        let phone = self
        let sessions = Task {
            for await url in qrCodes {
                if phone.scanDelay > .zero { try? await Task.sleep(for: phone.scanDelay) }
                do {
                    _ = try await phone.link.serve(
                        qrCode: try QRCodePayload(url: url), authenticator: phone.authenticator)
                } catch {
                    phone.onFailure(error)
                }
            }
        }
        let result: Result<T, any Error>
        do {
            result = .success(try await body({ screen.yield($0) }))
        } catch {
            result = .failure(error)
        }
        screen.finish()
        await sessions.value
        return try result.get()
    }
}
