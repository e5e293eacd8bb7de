import AsyncHTTPClient
#if canImport(Glibc)
    import Glibc
#endif
import Basics
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import WebAuthnClient

/// Why a well-known fetch got no answer to read. `code` is stable; `description` says what happened.
public struct HTTPSFetchError: CodedError {
    public enum Code: String, Hashable, Sendable, CaseIterable {
        /// No connection, TLS refused (an untrusted or wrong certificate), timed out, the connection closed early.
        case fetchFailed
        /// The body was larger than the limit.
        case tooLarge
    }

    /// Why a fetch failed, in a person's terms; `other` for what is not told apart.
    public enum Failure: String, Hashable, Sendable {
        /// The site's certificate is not trusted, or not for this name: TLS refused.
        case certificate
        /// Nothing listens at the address and port: the connection was refused.
        case refused
        /// The name does not resolve.
        case unresolved
        /// No whole answer within the time allowed.
        case timedOut
        case other

        /// Whether trying again soon may change the answer: a time-out or a dropped connection may; a refused
        /// connection, an untrusted certificate or a name that does not resolve are the site's setup.
        public var isTransient: Bool { self == .timedOut || self == .other }
    }

    public var code: Code
    public var description: String
    /// For ``Code/fetchFailed``: which failure it was.
    public var failure: Failure

    public init(_ code: Code, _ description: String, failure: Failure = .other) {
        self.code = code
        self.description = description
        self.failure = failure
    }

    /// The failure `error` (from AsyncHTTPClient, NIO or NIOSSL) was, said for a person: no library type names or
    /// errno numbers (issue 24: "connection reset (error set): Connection refused) (errno: 111)").
    static func classify(_ error: any Error, url: String) -> HTTPSFetchError {
        switch error {
        case let error as HTTPSFetchError:
            return error
        case is NIOSSLError, is BoringSSLError, is NIOSSLExtraError:
            return HTTPSFetchError(
                .fetchFailed, "the site's certificate for \(url) is not trusted, or not for this name",
                failure: .certificate)
        case let error as NIOConnectionError:
            if error.dnsAError != nil || error.dnsAAAAError != nil, error.connectionErrors.isEmpty {
                return HTTPSFetchError(.fetchFailed, "the name in \(url) does not resolve", failure: .unresolved)
            }
            if let first = error.connectionErrors.first?.error { return classify(first, url: url) }
            return HTTPSFetchError(.fetchFailed, "could not connect to \(url)")
        case let error as IOError where error.errnoCode == ECONNREFUSED:
            return HTTPSFetchError(
                .fetchFailed, "the connection to \(url) was refused: nothing listens there", failure: .refused)
        case let error as HTTPClientError where error == .connectTimeout || error == .deadlineExceeded:
            return HTTPSFetchError(.fetchFailed, "\(url) did not answer in time", failure: .timedOut)
        case let error as HTTPClientError where error == .remoteConnectionClosed:
            return HTTPSFetchError(.fetchFailed, "\(url) closed the connection before answering")
        case let error as SocketAddressError:
            if case .unknown = error {
                return HTTPSFetchError(.fetchFailed, "the name in \(url) does not resolve", failure: .unresolved)
            }
            return HTTPSFetchError(.fetchFailed, "could not connect to \(url)")
        default:
            return HTTPSFetchError(.fetchFailed, "the fetch of \(url) failed (\(String(describing: type(of: error))))")
        }
    }
}

/// The GET that the well-known documents share (`/.well-known/webauthn`, `apple-app-site-association`,
/// `assetlinks.json`), with AsyncHTTPClient: https only, no credentials (no cookies are kept), no referrer, and **no
/// redirects** (a 3xx is returned as it is, for the caller to refuse). The server's certificate is verified against
/// the system's trust store, plus a CA file when one is given (`--ca`, tests). A 200's body is read up to a limit;
/// other statuses come back without their body. The whole exchange is bounded by `timeout`.
public struct HTTPSFetcher: Sendable {
    /// A PEM file of further certificate authorities to trust, besides the system's.
    public var additionalCAFile: String?
    /// How long connecting (TCP and TLS) may take, and the whole request. AsyncHTTPClient tries a failing connection
    /// again until the connect time is up, then reports why it failed: 2 s, so that a refused connection or an
    /// untrusted certificate is said within 2 s (issue 24); a time-out is worth a retry, and callers retry.
    public var connectTimeout: Duration
    public var timeout: Duration

    public init(
        additionalCAFile: String? = nil, connectTimeout: Duration = .seconds(5), timeout: Duration = .seconds(10)
    ) {
        self.additionalCAFile = additionalCAFile
        self.connectTimeout = connectTimeout
        self.timeout = timeout
    }

    /// `https://host[:port]path`, the port left out when it is 443.
    public static func url(host: String, port: Int = 443, path: String) -> String {
        port == 443 ? "https://\(host)\(path)" : "https://\(host):\(port)\(path)"
    }

    /// GETs `url`, asking for `accept`, reading at most `limit` bytes of a 200's body.
    public func get(_ url: String, accept: String, userAgent: String, limit: Int) async throws(HTTPSFetchError)
        -> WellKnownResponse
    {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.certificateVerification = .fullVerification
        if let additionalCAFile { tls.additionalTrustRoots = [.file(additionalCAFile)] }
        var configuration = HTTPClient.Configuration(
            tlsConfiguration: tls, redirectConfiguration: .disallow,
            timeout: .init(connect: TimeAmount(connectTimeout), read: TimeAmount(timeout)))
        // One attempt: the client's own retries would hide a refused connection or an untrusted certificate
        // behind a time-out. The callers retry what a retry can change.
        configuration.connectionPool.retryConnectionEstablishment = false
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        let result: Result<WellKnownResponse, HTTPSFetchError>
        do {
            result = .success(
                try await withDeadline { [self] in
                    try await fetch(url, accept: accept, userAgent: userAgent, limit: limit, client: client)
                })
        } catch {
            result = .failure(HTTPSFetchError.classify(error, url: url))
        }
        try? await client.shutdown()
        return try result.get()
    }

    /// `operation`, cancelled when it has not finished within `timeout`: AsyncHTTPClient's own bounds cover the
    /// connection, the response head and each read, but not a body dripped a byte at a time (issue 23, attack 6).
    private func withDeadline(
        _ operation: @escaping @Sendable () async throws -> WellKnownResponse
    ) async throws -> WellKnownResponse {
        let timeout = timeout
        return try await withThrowingTaskGroup(of: WellKnownResponse?.self) { group in
            group.addTask { try await operation() }
            group.addTask {
                try await Task.sleep(for: timeout)
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let response = first else {
                throw HTTPSFetchError(.fetchFailed, "no whole answer within \(timeout)", failure: .timedOut)
            }
            return response
        }
    }

    private func fetch(_ url: String, accept: String, userAgent: String, limit: Int, client: HTTPClient)
        async throws -> WellKnownResponse
    {
        var request = HTTPClientRequest(url: url)
        request.method = .GET
        request.headers.add(name: "Accept", value: accept)
        request.headers.add(name: "User-Agent", value: userAgent)
        let response = try await client.execute(request, timeout: TimeAmount(timeout))
        let contentType = response.headers.first(name: "Content-Type")
        let status = Int(response.status.code)
        // A refused status needs no body: the verdict is the status.
        guard status == 200 else { return WellKnownResponse(status: status, contentType: contentType, body: []) }
        if let length = response.headers.first(name: "Content-Length").flatMap(Int.init), length > limit {
            throw HTTPSFetchError(.tooLarge, "the body is \(length) bytes, over \(limit)")
        }
        let body: ByteBuffer
        do {
            body = try await response.body.collect(upTo: limit)
        } catch is NIOTooManyBytesError {
            throw HTTPSFetchError(.tooLarge, "the body is over \(limit) bytes")
        }
        return WellKnownResponse(status: status, contentType: contentType, body: Array(buffer: body))
    }
}
