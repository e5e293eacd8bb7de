import PublicSuffix
import WebAuthnClient

/// Fetches an RP ID's `/.well-known/webauthn` over HTTPS with ``HTTPSFetcher``, as WebAuthn L3 §5.11 asks: https
/// only, no credentials (the client keeps no cookies), no referrer; and, stricter than the spec, no redirects at
/// all (a 3xx is returned as it is, and refused). The server's certificate is verified against the system's trust
/// store, plus a CA file when one is given (`--related-origins-ca`, tests). The body is read up to
/// ``RelatedOrigins/maximumDocumentSize`` bytes, and the whole exchange is bounded by `timeout`.
public struct HTTPSRelatedOriginsSource: RelatedOriginsSource {
    /// A PEM file of further certificate authorities to trust, besides the system's.
    public var additionalCAFile: String?
    /// The port to connect to: 443, which the well-known URL implies; tests use a local server's.
    public var port: Int
    /// How long connecting may take, and the whole request.
    public var connectTimeout: Duration
    public var timeout: Duration

    public init(
        additionalCAFile: String? = nil, port: Int = 443, connectTimeout: Duration = .seconds(5),
        timeout: Duration = .seconds(10)
    ) {
        self.additionalCAFile = additionalCAFile
        self.port = port
        self.connectTimeout = connectTimeout
        self.timeout = timeout
    }

    /// The URL fetched for `rpID`: ``RelatedOrigins/wellKnownURL(for:)``, with the port when it is not 443.
    public func url(for rpID: DomainName) -> String {
        port == 443
            ? RelatedOrigins.wellKnownURL(for: rpID)
            : HTTPSFetcher.url(host: "\(rpID)", port: port, path: "/.well-known/webauthn")
    }

    public func wellKnownResponse(for rpID: DomainName) async throws(RelatedOriginsError) -> WellKnownResponse {
        let fetcher = HTTPSFetcher(additionalCAFile: additionalCAFile, connectTimeout: connectTimeout, timeout: timeout)
        do {
            return try await fetcher.get(
                url(for: rpID), accept: "application/json", userAgent: "passkey (WebAuthn related origins)",
                limit: RelatedOrigins.maximumDocumentSize)
        } catch {
            switch error.code {
            case .fetchFailed: throw RelatedOriginsError(.fetchFailed, error.description)
            case .tooLarge: throw RelatedOriginsError(.tooLarge, error.description)
            }
        }
    }
}

/// Fetches an RP ID's `/.well-known/passkey-endpoints` over HTTPS with ``HTTPSFetcher``, with the related origins
/// document's rules: https only, no credentials, no referrer, no redirects, the certificate verified, the body read up
/// to ``PasskeyEndpoints/maximumDocumentSize`` bytes, the whole exchange bounded by `timeout`.
public struct HTTPSPasskeyEndpointsSource: Sendable {
    public var additionalCAFile: String?
    /// The port to connect to: 443, which the well-known URL implies; tests use a local server's.
    public var port: Int
    public var timeout: Duration

    public init(additionalCAFile: String? = nil, port: Int = 443, timeout: Duration = .seconds(10)) {
        self.additionalCAFile = additionalCAFile
        self.port = port
        self.timeout = timeout
    }

    /// The URL fetched for `rpID`, with the port when it is not 443.
    public func url(for rpID: DomainName) -> String {
        port == 443
            ? PasskeyEndpoints.wellKnownURL(for: rpID)
            : HTTPSFetcher.url(host: "\(rpID)", port: port, path: "/.well-known/passkey-endpoints")
    }

    /// The endpoints `rpID` publishes, or why there are none (one line).
    public func endpoints(for rpID: DomainName) async throws(PasskeyEndpointsError) -> PasskeyEndpoints {
        let fetcher = HTTPSFetcher(additionalCAFile: additionalCAFile, connectTimeout: .seconds(5), timeout: timeout)
        let response: WellKnownResponse
        do {
            response = try await fetcher.get(
                url(for: rpID), accept: "application/json", userAgent: "passkey (passkey endpoints)",
                limit: PasskeyEndpoints.maximumDocumentSize)
        } catch {
            throw PasskeyEndpointsError(error.description)
        }
        return try PasskeyEndpoints(response: response)
    }
}
