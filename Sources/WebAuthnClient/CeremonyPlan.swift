import Foundation

/// What the planner knows of one configured authenticator before any session is opened.
public struct AuthenticatorSummary: Hashable, Sendable {
    public var kind: AuthenticatorKind
    public var transports: [AuthenticatorTransport]
    /// What it lists for the RP without asking the user; nil when it cannot list (a phone, a security key).
    public var credentials: [CredentialMetadata]?

    public init(kind: AuthenticatorKind, transports: [AuthenticatorTransport], credentials: [CredentialMetadata]?) {
        self.kind = kind
        self.transports = transports
        self.credentials = credentials
    }
}

/// One request the plan may send: which authenticator, with which allow list.
public struct PlannedRequest: Hashable, Sendable {
    /// The authenticator's index in the engine's list.
    public var authenticator: Int
    public var kind: AuthenticatorKind
    /// For `get`: the descriptors that may be bound to this authenticator; empty for a discoverable request.
    public var allowList: [PublicKeyCredentialDescriptor]
    /// The listed credential this request is for, when the user picks an account before any request.
    public var account: CredentialMetadata?
    /// How it shows in a chooser.
    public var choice: ClientChoice

    public init(
        authenticator: Int, kind: AuthenticatorKind, allowList: [PublicKeyCredentialDescriptor] = [],
        account: CredentialMetadata? = nil, choice: ClientChoice
    ) {
        self.authenticator = authenticator
        self.kind = kind
        self.allowList = allowList
        self.account = account
        self.choice = choice
    }
}

/// What to do: decided from the options, the mediation and what the authenticators hold, before anything is shown.
public enum CeremonyPlan: Hashable, Sendable {
    /// Fail at once; nothing is shown.
    case fail(ClientError)
    /// Show these choices, in this order; carry out the one picked.
    case ask([PlannedRequest], conditional: Bool)
    /// Carry these out without asking; several run at once and the first to finish decides (the QR code while a
    /// security key listens, as Chrome's QR sheet does).
    case proceed([PlannedRequest])
}

/// A `get` plan: the decision, and the filter conditional mediation keeps.
public struct GetPlan: Hashable, Sendable {
    public var decision: CeremonyPlan
    /// Conditional mediation's credentialIdFilter (WebAuthn L3 §5.1.4.1 step 3): when not empty, a response must
    /// name one of these.
    public var credentialIDFilter: [[UInt8]]
    /// The mediation in effect: a typed user name turns a conditional request modal.
    public var mediation: CredentialMediation
}

/// The decision rules of `Docs/Client.md`, as pure functions: no I/O, no UI, so each row of the table has a test.
public enum CeremonyPlanner {
    /// Plans `navigator.credentials.get()`.
    ///
    /// - `immediate` (and `preferImmediatelyAvailable`): only credentials listed on this computer; none is
    ///   `NotAllowedError` at once, and `immediate` with an allow list is `NotAllowedError`.
    /// - `conditional`: the allow list becomes a filter and the request is discoverable; the listed credentials and
    ///   "use a phone" / "use a security key" are offered, never a "nothing found"; a typed user name makes the
    ///   request modal with that user's listed credentials as its allow list (with none listed, the listed
    ///   credentials, other users', are left out and a phone or key is asked).
    /// - modal: listed credentials (bound ones only with an allow list), then a phone, then a security key, in the
    ///   order the hints give; one listed account and no hint for another kind goes ahead alone; no listed account
    ///   goes straight to the QR code, a security key listening meanwhile.
    public static func planGet(
        allowCredentials: [PublicKeyCredentialDescriptor], hints: [PublicKeyCredentialHint],
        mediation requested: CredentialMediation, preferImmediatelyAvailable: Bool, typedUserName: String?,
        authenticators: [AuthenticatorSummary]
    ) -> GetPlan {
        var mediation = requested
        var allow = allowCredentials
        var filter: [[UInt8]] = []
        // A typed name that no listed credential carries: the listed credentials are other people's.
        var listedExcluded = false
        if mediation == .immediate && !allowCredentials.isEmpty {
            return GetPlan(
                decision: .fail(ClientError(.immediateWithAllowList)), credentialIDFilter: [], mediation: mediation)
        }
        if mediation == .conditional {
            if let name = typedUserName {
                // The user typed a name: a modal request for that user's credentials, as a page does after it looks
                // the name up (the conditional request is aborted and a modal one started).
                var named: [PublicKeyCredentialDescriptor] = []
                for summary in authenticators {
                    for credential in summary.credentials ?? []
                    where credential.userName == name
                        && (allow.isEmpty || allow.contains { $0.id == credential.credentialID })
                    {
                        named.append(
                            PublicKeyCredentialDescriptor(id: credential.credentialID, transports: summary.transports))
                    }
                }
                if named.isEmpty { listedExcluded = true } else { allow = named }
                mediation = .optional
            } else {
                filter = allow.filter { $0.type == "public-key" }.map(\.id)
                allow = []
            }
        }

        let usable = allow.filter { $0.type == "public-key" }
        if !allow.isEmpty && usable.isEmpty {
            return GetPlan(
                decision: .fail(
                    ClientError(.noEligibleAuthenticator("allowCredentials names no public-key credential"))),
                credentialIDFilter: filter, mediation: mediation)
        }
        var listed: [PlannedRequest] = []
        var others: [PlannedRequest] = []
        for (index, summary) in authenticators.enumerated() {
            if let credentials = summary.credentials {
                if listedExcluded { continue }
                let matches = credentials.filter { credential in
                    usable.isEmpty
                        ? credential.isDiscoverable && (filter.isEmpty || filter.contains(credential.credentialID))
                        : usable.contains { $0.id == credential.credentialID }
                }
                for credential in Self.mostRecentFirst(matches) {
                    listed.append(
                        PlannedRequest(
                            authenticator: index, kind: summary.kind,
                            allowList: [
                                PublicKeyCredentialDescriptor(
                                    id: credential.credentialID, transports: summary.transports)
                            ],
                            account: credential, choice: .account(credential, on: summary.kind)))
                }
            } else {
                // A hint naming this kind wins over the descriptors' transports when they conflict (§5.8.8): the
                // relying party's transports are a record of the past, the hint what it asks for now.
                let hinted = hints.contains(summary.kind.hint)
                let bound = usable.filter { descriptor in
                    descriptor.transports.isEmpty || hinted
                        || descriptor.transports.contains { summary.transports.contains($0) }
                }
                guard usable.isEmpty || !bound.isEmpty else { continue }
                others.append(
                    PlannedRequest(
                        authenticator: index, kind: summary.kind, allowList: bound,
                        choice: Self.choice(for: summary.kind)))
            }
        }

        let decision: CeremonyPlan
        if mediation == .immediate || (preferImmediatelyAvailable && mediation != .conditional) {
            if listed.isEmpty {
                decision = .fail(ClientError(.noImmediatelyAvailableCredential))
            } else {
                decision = listed.count == 1 ? .proceed(listed) : .ask(listed, conditional: false)
            }
        } else if mediation == .conditional {
            decision = .ask(listed + ordered(others, hints: hints), conditional: true)
        } else if listed.isEmpty && others.isEmpty {
            let why =
                usable.isEmpty
                ? "no passkey for this site is on this computer, and no phone or security key is available"
                : "none of allowCredentials is on this computer, and no phone or security key can hold them"
            decision = .fail(ClientError(.noEligibleAuthenticator(why)))
        } else if listed.count == 1 && !hints.contains(.securityKey) && !hints.contains(.hybrid) {
            decision = .proceed(listed)
        } else if listed.isEmpty {
            decision = .proceed(ordered(others, hints: hints))
        } else {
            decision = .ask(ordered(listed + others, hints: hints), conditional: false)
        }
        return GetPlan(decision: decision, credentialIDFilter: filter, mediation: mediation)
    }

    /// Plans `navigator.credentials.create()`: the authenticators the attachment allows, and those the hints name
    /// (hints win over the attachment, §5.8.8), in hint order. One goes ahead alone; a choice that includes this
    /// computer is asked; a phone and a security key without this computer run at once.
    public static func planCreate(
        attachment: AuthenticatorAttachment?, hints: [PublicKeyCredentialHint], authenticators: [AuthenticatorSummary]
    ) -> CeremonyPlan {
        let hinted = Set(hints)
        var candidates: [PlannedRequest] = []
        for (index, summary) in authenticators.enumerated()
        where attachment == nil || summary.kind.attachment == attachment || hinted.contains(summary.kind.hint) {
            candidates.append(
                PlannedRequest(authenticator: index, kind: summary.kind, choice: Self.choice(for: summary.kind)))
        }
        guard !candidates.isEmpty else {
            let wanted = attachment.map { "a \($0.rawValue) authenticator" } ?? "an authenticator"
            return .fail(ClientError(.noEligibleAuthenticator("\(wanted) was asked for and none is available")))
        }
        let sorted = ordered(candidates, hints: hints)
        if sorted.count == 1 { return .proceed(sorted) }
        return sorted.contains { $0.kind == .platform } ? .ask(sorted, conditional: false) : .proceed(sorted)
    }

    /// Requests in hint order: kinds the hints name first, in the hints' order, then this computer, a phone and a
    /// security key. The order within a kind is kept.
    static func ordered(_ requests: [PlannedRequest], hints: [PublicKeyCredentialHint]) -> [PlannedRequest] {
        func rank(_ kind: AuthenticatorKind) -> Int {
            if let position = hints.firstIndex(of: kind.hint) { return position - hints.count }
            return AuthenticatorKind.allCases.firstIndex(of: kind)!
        }
        return requests.enumerated().sorted { lhs, rhs in
            let (left, right) = (rank(lhs.element.kind), rank(rhs.element.kind))
            return left != right ? left < right : lhs.offset < rhs.offset
        }.map(\.element)
    }

    /// Last used first, then newest first; undated last, in listing order.
    static func mostRecentFirst(_ credentials: [CredentialMetadata]) -> [CredentialMetadata] {
        credentials.enumerated().sorted { lhs, rhs in
            let left = (lhs.element.lastUsed ?? lhs.element.created)
            let right = (rhs.element.lastUsed ?? rhs.element.created)
            switch (left, right) {
            case (let left?, let right?) where left != right: return left > right
            case (.some, nil): return true
            case (nil, .some): return false
            default: return lhs.offset < rhs.offset
            }
        }.map(\.element)
    }

    static func choice(for kind: AuthenticatorKind) -> ClientChoice {
        switch kind {
        case .platform: .thisComputer
        case .hybrid: .phone
        case .securityKey: .securityKey
        }
    }
}
