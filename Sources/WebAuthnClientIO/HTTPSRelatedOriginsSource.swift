import AsyncHTTPClient
import NIOCore
import NIOHTTP1
import NIOSSL
import PublicSuffix
import WebAuthnClient

/// Fetches an RP ID's `/.well-known/webauthn` over HTTPS with AsyncHTTPClient, as WebAuthn L3 §5.11 asks: https
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
        port == 443 ? RelatedOrigins.wellKnownURL(for: rpID) : "https://\(rpID):\(port)/.well-known/webauthn"
    }

    public func wellKnownResponse(for rpID: DomainName) async throws(RelatedOriginsError) -> WellKnownResponse {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.certificateVerification = .fullVerification
        if let additionalCAFile { tls.additionalTrustRoots = [.file(additionalCAFile)] }
        let configuration = HTTPClient.Configuration(
            tlsConfiguration: tls, redirectConfiguration: .disallow,
            timeout: .init(connect: Self.timeAmount(connectTimeout), read: Self.timeAmount(timeout)))
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        let result: Result<WellKnownResponse, RelatedOriginsError>
        do {
            result = .success(try await fetch(url(for: rpID), client: client))
        } catch let error as RelatedOriginsError {
            result = .failure(error)
        } catch {
            result = .failure(RelatedOriginsError(.fetchFailed, "the fetch failed: \(error)"))
        }
        try? await client.shutdown()
        return try result.get()
    }

    private func fetch(_ url: String, client: HTTPClient) async throws -> WellKnownResponse {
        var request = HTTPClientRequest(url: url)
        request.method = .GET
        request.headers.add(name: "Accept", value: "application/json")
        request.headers.add(name: "User-Agent", value: "passkey (WebAuthn related origins)")
        let response = try await client.execute(request, timeout: Self.timeAmount(timeout))
        let contentType = response.headers.first(name: "Content-Type")
        let status = Int(response.status.code)
        // A refused status needs no body: the verdict is the status.
        guard status == 200 else { return WellKnownResponse(status: status, contentType: contentType, body: []) }
        let limit = RelatedOrigins.maximumDocumentSize
        if let length = response.headers.first(name: "Content-Length").flatMap(Int.init), length > limit {
            throw RelatedOriginsError(.tooLarge, "the body is \(length) bytes, over \(limit)")
        }
        let body: ByteBuffer
        do {
            body = try await response.body.collect(upTo: limit)
        } catch is NIOTooManyBytesError {
            throw RelatedOriginsError(.tooLarge, "the body is over \(limit) bytes")
        }
        return WellKnownResponse(status: status, contentType: contentType, body: Array(buffer: body))
    }

    private static func timeAmount(_ duration: Duration) -> TimeAmount {
        let (seconds, attoseconds) = duration.components
        return .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
