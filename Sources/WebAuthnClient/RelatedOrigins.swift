import Basics
import Foundation
import PublicSuffix

/// The answer to `GET https://{rpID}/.well-known/webauthn`, as a fetch saw it: what the related origins validation
/// procedure reads (WebAuthn L3 §5.11.1 step 2).
public struct WellKnownResponse: Hashable, Sendable {
    /// The HTTP status code. Redirects are not followed, so a 3xx arrives here and is refused.
    public var status: Int
    /// The `Content-Type` header as sent, or nil.
    public var contentType: String?
    /// The body; a fetch stops reading past ``RelatedOrigins/maximumDocumentSize``.
    public var body: [UInt8]

    public init(status: Int, contentType: String?, body: [UInt8]) {
        self.status = status
        self.contentType = contentType
        self.body = body
    }
}

/// Where the related origins document comes from: HTTPS in `WebAuthnClientIO`, documents in memory in tests.
public protocol RelatedOriginsSource: Sendable {
    /// Fetches `https://{rpID}/.well-known/webauthn` without credentials, without a referrer and without following
    /// redirects, reading at most ``RelatedOrigins/maximumDocumentSize`` bytes of body.
    func wellKnownResponse(for rpID: DomainName) async throws(RelatedOriginsError) -> WellKnownResponse
}

/// Why an RP ID's related origins document was not used. `code` is stable; `description` says what was wrong.
public struct RelatedOriginsError: CodedError {
    /// A stable identifier for each kind of failure.
    public enum Code: String, Hashable, Sendable, CaseIterable {
        /// The fetch failed: no connection, TLS refused, timed out, the connection closed early.
        case fetchFailed
        /// The status was not 200 (a redirect included: none is followed).
        case status
        /// The content type was not `application/json`.
        case contentType
        /// The body was larger than ``RelatedOrigins/maximumDocumentSize``.
        case tooLarge
        /// The body is not a JSON object.
        case notAJSONObject
        /// The object has no `origins`, or it is not an array of strings.
        case badOrigins
    }

    /// The kind of failure.
    public var code: Code
    /// One line for people.
    public var description: String

    public init(_ code: Code, _ description: String) {
        self.code = code
        self.description = description
    }
}

/// Related Origin Requests (WebAuthn L3 §5.11): an RP may list, at `https://{rpID}/.well-known/webauthn`, origins
/// outside its domain that may use its RP ID, and a client checks that list when the suffix check fails.
public enum RelatedOrigins {
    /// The registrable origin labels this client counts: §5.11 asks clients to support "at least five".
    public static let maximumLabels = 5
    /// The largest document read: the spec sets none, and a list of origins has no need of more.
    public static let maximumDocumentSize = 64 * 1024

    /// `https://{rpID}/.well-known/webauthn` (RFC 8615; WebAuthn L3 §5.11.1 step 2).
    public static func wellKnownURL(for rpID: DomainName) -> String { "https://\(rpID)/.well-known/webauthn" }

    /// The `origins` of a response, or why the response is refused: §5.11.1 step 2's checks, in its order.
    public static func origins(in response: WellKnownResponse) throws(RelatedOriginsError) -> [String] {
        guard response.status == 200 else {
            let note = (300..<400).contains(response.status) ? " (a redirect: they are not followed)" : ""
            throw RelatedOriginsError(.status, "the status was \(response.status), not 200\(note)")
        }
        let essence = response.contentType.map { type in
            asciiLowercased(type.prefix { $0 != ";" }.trimmingCharacters(in: .whitespaces))
        }
        guard essence == "application/json" else {
            let shown = response.contentType.map { "\(String($0.prefix(80)).debugDescription)" } ?? "absent"
            throw RelatedOriginsError(.contentType, "the content type was \(shown), not application/json")
        }
        guard response.body.count <= maximumDocumentSize else {
            throw RelatedOriginsError(.tooLarge, "the body is over \(maximumDocumentSize) bytes")
        }
        let object: [String: Any]
        do {
            guard let parsed = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any] else {
                throw RelatedOriginsError(.notAJSONObject, "the body is JSON but not an object")
            }
            object = parsed
        } catch let error as RelatedOriginsError {
            throw error
        } catch {
            throw RelatedOriginsError(.notAJSONObject, "the body is not JSON")
        }
        guard let value = object["origins"] else {
            throw RelatedOriginsError(.badOrigins, "the object has no \"origins\"")
        }
        guard let array = value as? [Any] else {
            throw RelatedOriginsError(.badOrigins, "\"origins\" is not an array")
        }
        var origins: [String] = []
        origins.reserveCapacity(array.count)
        for (index, item) in array.enumerated() {
            // JSONSerialization gives NSString for strings, and NSNumber for numbers and booleans.
            guard let text = item as? String, !(item is NSNumber) else {
                throw RelatedOriginsError(.badOrigins, "\"origins\"[\(index)] is not a string")
            }
            origins.append(text)
        }
        return origins
    }

    /// What the procedure's steps 3–5 decided, and the labels it counted.
    public struct Outcome: Hashable, Sendable {
        /// Whether the caller's origin is in the list within the label budget.
        public var matched: Bool
        /// The registrable origin labels counted, in the order first seen.
        public var labelsSeen: [String]
        /// Set when the caller's origin is listed but its label came after the budget was spent.
        public var listedBeyondBudget: Bool
        /// One phrase for a verdict's reason.
        public var explanation: String
    }

    /// WebAuthn L3 §5.11.1 steps 3–5: walk `origins` counting distinct registrable origin labels, up to
    /// `maximumLabels`; the caller is allowed if its origin is listed before its label falls outside the budget.
    public static func validate(
        callerOrigin: WebOrigin, origins: [String], list: PublicSuffixList, maximumLabels: Int = maximumLabels
    ) -> Outcome {
        var labelsSeen: [String] = []
        var listedBeyondBudget = false
        for originItem in origins {
            // 4.1: the URL parser; on failure, continue.
            guard let url = try? WebOrigin(url: originItem) else { continue }
            // 4.2–4.4: the effective domain, its registrable origin label; continue without one.
            guard let label = registrableOriginLabel(of: url, list: list) else { continue }
            // 4.5: once the budget is spent, only labels already seen count.
            if labelsSeen.count >= maximumLabels && !labelsSeen.contains(label) {
                if callerOrigin.isSameOrigin(as: url) { listedBeyondBudget = true }
                continue
            }
            // 4.6: the caller's origin, same origin as the item: allowed.
            if callerOrigin.isSameOrigin(as: url) {
                return Outcome(
                    matched: true, labelsSeen: labelsSeen, listedBeyondBudget: false,
                    explanation: "label \(label), within the \(maximumLabels)-label budget")
            }
            // 4.7: count the label.
            if labelsSeen.count < maximumLabels && !labelsSeen.contains(label) { labelsSeen.append(label) }
        }
        let counted = labelsSeen.isEmpty ? "no labels counted" : "labels counted: \(labelsSeen.joined(separator: ", "))"
        let explanation =
            listedBeyondBudget
            ? "\(callerOrigin) is listed, but its label comes after the \(maximumLabels)-label budget was spent "
                + "(\(counted))"
            : "\(callerOrigin) is not listed (\(counted))"
        return Outcome(
            matched: false, labelsSeen: labelsSeen, listedBeyondBudget: listedBeyondBudget, explanation: explanation)
    }

    /// WebAuthn L3 §4 "registrable origin label": the first label of the registrable domain of the origin's
    /// effective domain; nil for opaque origins, IP addresses, names that are no valid domain and public suffixes.
    public static func registrableOriginLabel(of origin: WebOrigin, list: PublicSuffixList) -> String? {
        guard case .domain(let host) = origin.host, let name = try? DomainName(host),
            let registrable = list.match(name).registrableDomain
        else { return nil }
        return String(registrable.prefix { $0 != "." })
    }
}
