/// How a domain answered for one app and service: the three states the platform keeps for an entitlement.
public enum ApprovalState: String, Hashable, Sendable, Codable, CaseIterable {
    /// The domain's file names the app for the service.
    case approved
    /// The domain answered and refused: no file, an invalid or badly signed file, or a file without the app.
    case denied
    /// The domain did not answer usefully (a 5xx, no connection) after every try: ask again later.
    case pending
}

/// What the file itself says, read by the caller's parser (``DomainCheck/evaluate``).
public enum FileEvaluation: Hashable, Sendable {
    /// The file names the app for the service.
    case names
    /// A valid file that does not name the app for the service; the text says what it lists.
    case doesNotName(String)
    /// Not a valid file: the parser's reason.
    case invalid(String)
}

/// The end of a check.
public struct CheckVerdict: Hashable, Sendable, Codable {
    public var state: ApprovalState
    /// One line for people: why.
    public var reason: String
    /// The last URL fetched, and its status when it answered.
    public var url: String
    public var status: Int?
    /// The signer's subject when the file was signed and verified.
    public var signer: String?
    /// The JSON that decided (the signed content when signed), for `domains match`; nil when there was none.
    public var file: [UInt8]?

    public init(
        state: ApprovalState, reason: String, url: String, status: Int? = nil, signer: String? = nil,
        file: [UInt8]? = nil
    ) {
        self.state = state
        self.reason = reason
        self.url = url
        self.status = status
        self.signer = signer
        self.file = file
    }
}

/// How many times a 5xx or a failed connection is tried, and how long to wait between tries.
public struct RetryPolicy: Hashable, Sendable {
    /// Fetches of one URL in all, the first included.
    public var attempts: Int
    /// The wait before the second fetch; each later wait is `factor` times the one before.
    public var firstDelay: Duration
    public var factor: Int

    public init(attempts: Int = 3, firstDelay: Duration = .seconds(2), factor: Int = 2) {
        self.attempts = max(1, attempts)
        self.firstDelay = firstDelay
        self.factor = max(1, factor)
    }
}

/// Checking one domain for one app, as the platform's associated-domains daemon does: the pure rules, with every
/// effect (fetching, waiting, verifying a signature) an ``Action`` for a driver to carry out.
///
/// 1. `GET https://DOMAIN[:PORT]/.well-known/apple-app-site-association`; when that answers 3xx or 4xx,
///    `GET https://DOMAIN[:PORT]/apple-app-site-association` (the older place), whose answer decides.
/// 2. 200 with a file that names the app for the service: approved. 200 with an HTML page, an invalid file, a bad
///    signature or no such app: denied. Over the size limit: denied. 3xx (never followed) or 4xx: denied.
/// 3. 5xx or no answer in time: tried again after a growing wait, ``RetryPolicy/attempts`` times in all; then pending.
///    A refused connection, an untrusted certificate or a name that does not resolve: pending at once, with why.
///
/// A body served as `application/pkcs7-mime`, or that is DER rather than JSON, is a signed file: the driver
/// verifies it for the domain (``Action/verify(_:domain:)``) and the signed content is read as the file.
public struct DomainCheck: Sendable {
    /// What the driver does next.
    public enum Action: Hashable, Sendable {
        /// GET the URL after waiting (zero for the first fetch of a URL).
        case fetch(url: String, after: Duration)
        /// Verify a signed file for the domain (host, without the port), then call ``signatureVerified(content:signer:)``
        /// or ``signatureRefused(_:)``.
        case verify([UInt8], domain: String)
        /// The check is over.
        case finish(CheckVerdict)
    }

    /// What a fetch brought back.
    public enum FetchOutcome: Hashable, Sendable {
        /// An answer: the status, the content type, and a 200's body (other statuses need none).
        case response(status: Int, contentType: String?, body: [UInt8])
        /// A 200 whose body was over the limit.
        case tooLarge(String)
        /// No answer that trying again soon may change: timed out, the connection dropped.
        case failed(String)
        /// No answer, for a reason a retry within seconds will not change: the connection refused, the certificate
        /// not trusted, the name not resolving. Pending at once, with the reason (issue 24: such a check retried
        /// silently for 21 s).
        case unreachable(String)
    }

    /// The largest file read: 128 KB, the platform's limit.
    public static let maximumFileSize = 128 * 1024
    /// The paths tried, in order.
    public static let paths = ["/.well-known/apple-app-site-association", "/apple-app-site-association"]

    public let host: String
    public let port: Int
    public let app: String
    public let service: String
    public let policy: RetryPolicy
    /// Reads a file's JSON for the app and service (the AASA parser).
    public let evaluate: @Sendable ([UInt8]) -> FileEvaluation

    private var pathIndex = 0
    private var attempt = 0
    private var status: Int?
    private var earlier: [String] = []
    private var finished: CheckVerdict?
    private var awaitingSignature = false

    public init(
        host: String, port: Int = 443, app: String, service: String, policy: RetryPolicy = RetryPolicy(),
        evaluate: @escaping @Sendable ([UInt8]) -> FileEvaluation
    ) {
        self.host = host
        self.port = port
        self.app = app
        self.service = service
        self.policy = policy
        self.evaluate = evaluate
    }

    /// The URL of the current try.
    public var url: String {
        let authority = port == 443 ? host : "\(host):\(port)"
        return "https://\(authority)\(Self.paths[pathIndex])"
    }

    /// The verdict, once ``Action/finish(_:)`` has been returned.
    public var verdict: CheckVerdict? { finished }

    /// The first fetch.
    public mutating func start() -> Action {
        attempt = 1
        return .fetch(url: url, after: .zero)
    }

    /// What the fetch of ``url`` brought back.
    public mutating func received(_ outcome: FetchOutcome) -> Action {
        guard finished == nil, !awaitingSignature else { return .finish(finished ?? deny("a fetch arrived unasked")) }
        switch outcome {
        case .failed(let reason):
            status = nil
            return retryOrPending("no answer from \(url): \(reason)")
        case .unreachable(let reason):
            status = nil
            return .finish(
                verdict(.pending, "no answer from \(url): \(reason); try again later", signer: nil, file: nil))
        case .tooLarge(let reason):
            status = 200
            return .finish(deny("the file at \(url) is over the \(Self.maximumFileSize / 1024) KB limit (\(reason))"))
        case .response(let code, let contentType, let body):
            status = code
            switch code {
            case 200: return read(body, contentType: contentType)
            case 300..<400:
                return fallBackOr("\(url) answered \(code), a redirect; redirects are never followed")
            case 400..<500: return fallBackOr("\(url) answered \(code)")
            case 500..<600: return retryOrPending("\(url) answered \(code)")
            default: return .finish(deny("\(url) answered \(code)"))
            }
        }
    }

    /// The signed file verified; `content` is what it signed.
    public mutating func signatureVerified(content: [UInt8], signer: String) -> Action {
        guard awaitingSignature else { return .finish(finished ?? deny("a signature result arrived unasked")) }
        awaitingSignature = false
        return decide(content, signer: signer)
    }

    /// The signed file was refused: why.
    public mutating func signatureRefused(_ reason: String) -> Action {
        guard awaitingSignature else { return .finish(finished ?? deny("a signature result arrived unasked")) }
        awaitingSignature = false
        return .finish(deny("the signed file at \(url) is refused: \(reason)"))
    }

    // MARK: - Rules

    private mutating func read(_ body: [UInt8], contentType: String?) -> Action {
        let mediaType = contentType.map(Self.mediaType)
        if Self.isHTML(body, mediaType: mediaType) {
            return .finish(
                deny(
                    "the server returned an HTML page for \(url) (Content-Type \(contentType ?? "none")), a common "
                        + "single-page-app mistake: the app's router answers every path with its index page. Serve "
                        + "the file itself at this path, as application/json"))
        }
        if mediaType == "application/pkcs7-mime" || body.first == 0x30 {
            awaitingSignature = true
            return .verify(body, domain: host)
        }
        return decide(body, signer: nil)
    }

    private mutating func decide(_ json: [UInt8], signer: String?) -> Action {
        let signed = signer == nil ? "" : " (signed by \(signer!))"
        switch evaluate(json) {
        case .names:
            return .finish(
                verdict(.approved, "\(url)\(signed) names \(app) for \(service)", signer: signer, file: json))
        case .doesNotName(let listed):
            return .finish(
                verdict(
                    .denied, "\(url)\(signed) does not name \(app) for \(service): \(listed)", signer: signer,
                    file: json))
        case .invalid(let reason):
            return .finish(
                verdict(.denied, "the file at \(url)\(signed) is not valid: \(reason)", signer: signer, file: nil))
        }
    }

    private mutating func fallBackOr(_ reason: String) -> Action {
        if pathIndex + 1 < Self.paths.count {
            earlier.append(reason)
            pathIndex += 1
            attempt = 1
            return .fetch(url: url, after: .zero)
        }
        return .finish(deny(reason))
    }

    private mutating func retryOrPending(_ reason: String) -> Action {
        guard attempt < policy.attempts else {
            let tries = policy.attempts == 1 ? "1 try" : "\(policy.attempts) tries"
            return .finish(verdict(.pending, "\(reason), after \(tries); try again later", signer: nil, file: nil))
        }
        var delay = policy.firstDelay
        for _ in 1..<attempt { delay *= policy.factor }
        attempt += 1
        return .fetch(url: url, after: delay)
    }

    private mutating func deny(_ reason: String) -> CheckVerdict {
        verdict(.denied, reason, signer: nil, file: nil)
    }

    private mutating func verdict(_ state: ApprovalState, _ reason: String, signer: String?, file: [UInt8]?)
        -> CheckVerdict
    {
        let before = earlier.isEmpty ? "" : earlier.joined(separator: "; ") + "; then "
        let result = CheckVerdict(
            state: state, reason: before + reason, url: url, status: status, signer: signer, file: file)
        finished = result
        return result
    }

    // MARK: - Body kinds

    /// The media type alone, lower case: `Text/HTML; charset=utf-8` is `text/html`.
    static func mediaType(_ contentType: String) -> String {
        let type = contentType.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        return type.filter { $0 != " " && $0 != "\t" }.lowercased()
    }

    /// An HTML page: served as HTML, or a body that opens with a tag (JSON never does).
    static func isHTML(_ body: [UInt8], mediaType: String?) -> Bool {
        if mediaType == "text/html" || mediaType == "application/xhtml+xml" { return true }
        var bytes = body[...]
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes = bytes.dropFirst(3) }
        let first = bytes.first { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }
        return first == UInt8(ascii: "<")
    }
}
