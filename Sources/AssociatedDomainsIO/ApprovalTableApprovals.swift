import AssociatedDomains
import PasskeyStoreIO

/// The approval table that `passkey domains check` keeps, as the shared web credentials rules read it: the domains
/// whose last check approved an app for a service. Denied and pending entries approve nothing.
public struct ApprovalTableApprovals: DomainApprovals {
    public let table: ApprovalTable

    public init(_ table: ApprovalTable) { self.table = table }

    public func approvedDomains(app: String, service: String) -> [String] {
        table.entries.compactMap { entry in
            guard entry.app == app, entry.state == .approved,
                let entitlement = try? Entitlement(entry.entitlement),
                entitlement.service.rawValue == service
            else { return nil }
            return entitlement.domain
        }
    }
}
