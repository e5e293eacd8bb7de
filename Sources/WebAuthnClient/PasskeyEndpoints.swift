import Basics
import Foundation
import PublicSuffix

/// A Well-Known URL for Passkey Endpoints (W3C, `https://{rpID}/.well-known/passkey-endpoints`): where a relying party
/// lets a person create a passkey (`enroll`) and manage theirs (`manage`), so that a passkey provider can link there
/// ("manage this passkey on the site"). Read with the rules of the related origins document (§5.11.1): status 200
/// only (no redirect is followed), `application/json`, at most ``maximumDocumentSize`` bytes, a JSON object. Each URL
/// must be `https` with a host (`http` only for this machine's loopback names, as browsers allow); a member that is
/// not is refused, and so is a document that names neither.
public struct PasskeyEndpoints: Hashable, Sendable {
    /// Where to create a passkey for this relying party.
    public var enroll: String?
    /// Where to see and remove the passkeys registered with it.
    public var manage: String?

    /// The largest document read: two URLs need far less.
    public static let maximumDocumentSize = 16 * 1024

    /// `https://{rpID}/.well-known/passkey-endpoints`.
    public static func wellKnownURL(for rpID: DomainName) -> String {
        "https://\(rpID)/.well-known/passkey-endpoints"
    }

    public init(enroll: String? = nil, manage: String? = nil) {
        self.enroll = enroll
        self.manage = manage
    }

    /// The endpoints a response names, or why it is refused (one line).
    public init(response: WellKnownResponse) throws(PasskeyEndpointsError) {
        guard response.status == 200 else {
            let note = (300..<400).contains(response.status) ? " (a redirect: they are not followed)" : ""
            throw PasskeyEndpointsError("the status was \(response.status), not 200\(note)")
        }
        let essence = response.contentType.map { type in
            type.prefix { $0 != ";" }.trimmingCharacters(in: .whitespaces).lowercased()
        }
        guard essence == "application/json" else {
            let shown = response.contentType.map { "\(String($0.prefix(80)).debugDescription)" } ?? "absent"
            throw PasskeyEndpointsError("the content type was \(shown), not application/json")
        }
        try self.init(document: response.body)
    }

    /// The endpoints in a document's bytes.
    public init(document bytes: [UInt8]) throws(PasskeyEndpointsError) {
        guard bytes.count <= Self.maximumDocumentSize else {
            throw PasskeyEndpointsError("the document is over \(Self.maximumDocumentSize) bytes")
        }
        let object: [String: Any]
        do {
            guard let parsed = try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any] else {
                throw PasskeyEndpointsError("the document is JSON but not an object")
            }
            object = parsed
        } catch let error as PasskeyEndpointsError {
            throw error
        } catch {
            throw PasskeyEndpointsError("the document is not JSON")
        }
        enroll = try Self.url(object, "enroll")
        manage = try Self.url(object, "manage")
        guard enroll != nil || manage != nil else {
            throw PasskeyEndpointsError("the document names neither \"enroll\" nor \"manage\"")
        }
    }

    /// Hosts whose `http` URLs count as secure, as browsers treat them (a relying party on this machine, `rp serve`).
    static let loopbackHosts: Set<String> = ["localhost", "127.0.0.1", "[::1]", "::1"]

    /// Member `name` as an https URL with a host (or http on this machine), nil when absent.
    private static func url(_ object: [String: Any], _ name: String) throws(PasskeyEndpointsError) -> String? {
        guard let value = object[name] else { return nil }
        // JSONSerialization gives NSString for strings, and NSNumber for numbers and booleans.
        guard let text = value as? String, !(value is NSNumber) else {
            throw PasskeyEndpointsError("\"\(name)\" is not a string")
        }
        guard text.utf8.count <= 2048, let url = URL(string: text), let host = url.host, !host.isEmpty,
            url.user == nil, url.password == nil,
            url.scheme?.lowercased() == "https"
                || (url.scheme?.lowercased() == "http" && Self.loopbackHosts.contains(host.lowercased()))
        else {
            throw PasskeyEndpointsError("\"\(name)\" is not an https URL with a host")
        }
        return text
    }
}

/// Why a passkey endpoints document was not used: one line for people.
public struct PasskeyEndpointsError: Error, Hashable, Sendable, CustomStringConvertible {
    public var description: String

    public init(_ description: String) { self.description = description }
}

extension PasskeyEndpoints {
    /// What a listing of passkeys shows for one relying party: where to manage its passkeys, or why that is unknown.
    public enum ManageLink: Hashable, Sendable {
        case manage(String)
        /// The site publishes endpoints but no manage URL.
        case noManageURL
        /// The RP ID is not a domain name the document can be fetched for (an IP address, for example).
        case notADomain
        /// The document could not be had: the reason, in one line.
        case unavailable(String)
    }

    /// The manage link of each of `rpIDs` (duplicates fetched once), fetched with `fetch` at most
    /// `maximumConcurrent` at a time: `passkey list --endpoints`. A failure for one RP ID is its entry, never the
    /// whole answer's.
    public static func manageLinks(
        for rpIDs: [String], maximumConcurrent: Int = 8,
        fetch: @escaping @Sendable (DomainName) async throws(PasskeyEndpointsError) -> PasskeyEndpoints
    ) async -> [String: ManageLink] {
        var links: [String: ManageLink] = [:]
        var pending: [(String, DomainName)] = []
        for rpID in Set(rpIDs).sorted() {
            guard let name = try? DomainName(rpID) else {
                links[rpID] = .notADomain
                continue
            }
            pending.append((rpID, name))
        }
        await withTaskGroup(of: (String, ManageLink).self) { group in
            var next = pending.makeIterator()
            func start() {
                guard let (rpID, name) = next.next() else { return }
                group.addTask {
                    do throws(PasskeyEndpointsError) {
                        let endpoints = try await fetch(name)
                        return (rpID, endpoints.manage.map(ManageLink.manage) ?? .noManageURL)
                    } catch {
                        return (rpID, .unavailable(error.description))
                    }
                }
            }
            for _ in 0..<max(1, maximumConcurrent) { start() }
            for await (rpID, link) in group {
                links[rpID] = link
                start()
            }
        }
        return links
    }
}
