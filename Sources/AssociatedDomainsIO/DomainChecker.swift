import AssociatedDomains
import SignedFilesIO
import WebAuthnClient
import WebAuthnClientIO

/// Carries out a ``DomainCheck``: every fetch over HTTPS with ``HTTPSFetcher`` (certificate validation, no
/// redirects, the 128 KB limit), every wait with `sleep`, every signed file through ``SignedFile/verify(_:domain:trust:at:)``,
/// without further decisions.
public struct DomainChecker: Sendable {
    public var fetcher: HTTPSFetcher
    /// The authorities a signed file's chain may end at.
    public var trust: TrustAnchors
    /// Waits between tries (`Task.sleep` by default; tests record the waits instead).
    public var sleep: @Sendable (Duration) async -> Void

    public init(
        fetcher: HTTPSFetcher = HTTPSFetcher(), trust: TrustAnchors = .system,
        sleep: @escaping @Sendable (Duration) async -> Void = { try? await Task.sleep(for: $0) }
    ) {
        self.fetcher = fetcher
        self.trust = trust
        self.sleep = sleep
    }

    /// Runs `check` to its verdict.
    public func run(_ check: DomainCheck) async -> CheckVerdict {
        var check = check
        var action = check.start()
        while true {
            switch action {
            case .fetch(let url, let after):
                if after > .zero { await sleep(after) }
                action = check.received(await fetch(url))
            case .verify(let der, let domain):
                do {
                    let verified = try SignedFile.verify(der, domain: domain, trust: trust)
                    action = check.signatureVerified(content: verified.content, signer: verified.signer)
                } catch {
                    action = check.signatureRefused(error.description)
                }
            case .finish(let verdict):
                return verdict
            }
        }
    }

    private func fetch(_ url: String) async -> DomainCheck.FetchOutcome {
        do {
            let response = try await fetcher.get(
                url, accept: "application/json, application/pkcs7-mime", userAgent: "passkey (associated domains)",
                limit: DomainCheck.maximumFileSize)
            return .response(status: response.status, contentType: response.contentType, body: response.body)
        } catch {
            switch error.code {
            case .tooLarge: return .tooLarge(error.description)
            case .fetchFailed:
                return error.failure.isTransient ? .failed(error.description) : .unreachable(error.description)
            }
        }
    }
}
