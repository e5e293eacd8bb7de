import Basics
import Foundation

/// Which domains approved which apps for an associated-domains service (`webcredentials`, `applinks`, …): the
/// platform's approval table, read only. `passkey domains check` writes it (`ApprovalTableFile` in
/// AssociatedDomainsIO, which answers this protocol through `ApprovalTableApprovals`); tests use
/// `InMemoryDomainApprovals`.
public protocol DomainApprovals: Sendable {
    /// The domains (`example.com`, or `example.com:8443` for a port) whose association file approved `app`
    /// (`TEAMID.bundle.id`) for `service`, as of their last check. Denied and pending entries are not approved.
    func approvedDomains(app: String, service: String) -> [String]
}

/// Approvals held in memory: `approved[app][service]` lists the domains.
public struct InMemoryDomainApprovals: DomainApprovals {
    public var approved: [String: [String: [String]]]

    public init(_ approved: [String: [String: [String]]] = [:]) {
        self.approved = approved
    }

    public func approvedDomains(app: String, service: String) -> [String] {
        approved[app]?[service] ?? []
    }
}

/// The rules of `SecRequestSharedWebCredential` and `SecAddSharedWebCredential`: an app sees and saves the logins of
/// the domains that approved it for `webcredentials`, and nothing tells it whether a domain it may not use has any.
public enum SharedWebCredentials {
    /// The associated-domains service these rules need.
    public static let service = "webcredentials"

    /// The logins `app` may be offered: those of `domain` when it approved the app, else of every domain that did
    /// (`domain` nil). A domain that did not approve the app and one that approved it but has no login give the same
    /// empty answer. A login matches a domain when its service is that domain, or an `https://` origin on that host
    /// and port (`example.com:8443` for `https://example.com:8443`). In listing order.
    public static func offered(
        to app: String, domain: String?, approvals: any DomainApprovals, logins: [SavedLogin]
    ) -> [SavedLogin] {
        let approved = Set(approvals.approvedDomains(app: app, service: service).map { $0.lowercased() })
        let wanted: Set<String>
        if let domain {
            let requested = domain.lowercased()
            guard approved.contains(requested) else { return [] }
            wanted = [requested]
        } else {
            wanted = approved
        }
        return logins.filter { login in login.service.hostAndPort.map(wanted.contains) ?? false }
            .sorted(by: SavedLogin.listedBefore)
    }

    /// Whether `domain` (`host` or `host:port`) approved `app` for `webcredentials`.
    public static func isApproved(app: String, domain: String, approvals: any DomainApprovals) -> Bool {
        approvals.approvedDomains(app: app, service: service).contains { $0.lowercased() == domain.lowercased() }
    }

    /// What adding (or, with no password, deleting) a login from an app does.
    public enum AddDecision: Hashable, Sendable {
        /// The domain did not approve the app: refused, nothing changes.
        case notApproved
        /// A new login: saved without asking.
        case saveSilently
        /// The login has this very password already: nothing to do.
        case unchanged
        /// The login has another password: the user is asked before it is replaced.
        case askToChange
        /// Deleting a login: the user is asked first.
        case askToDelete
        /// Deleting a login that is not there.
        case nothingToDelete
    }

    /// `SecAddSharedWebCredential`: `app` saves `password` (nil: deletes the login) for `domain`, where `existing`
    /// is the login already saved for that domain and user, if any. The existing password is compared in constant
    /// time.
    public static func decideAdd(
        app: String, domain: String, approvals: any DomainApprovals, existing: PasswordCredential?, password: String?
    ) -> AddDecision {
        guard isApproved(app: app, domain: domain, approvals: approvals) else { return .notApproved }
        guard let password else { return existing == nil ? .nothingToDelete : .askToDelete }
        guard let existing else { return .saveSilently }
        return existing.hasPassword(password) ? .unchanged : .askToChange
    }

    /// `host` or `host:port` with a host that is a domain name.
    public static func isDomain(_ text: String) -> Bool {
        let parts = text.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        guard let host = parts.first, PasswordService.isDomain(String(host).lowercased()) else { return false }
        guard parts.count == 2 else { return true }
        guard let port = Int(parts[1]), (1...65535).contains(port), String(port) == parts[1] else { return false }
        return true
    }
}
