import PublicSuffix

/// Whether a browser would let an origin use an RP ID, which rule decided it, and why.
public struct RelyingPartyIDVerdict: Hashable, Sendable, CustomStringConvertible {
    /// The rule that decided, one per clause of the specifications (Docs/Client.md lists them with their sections).
    public enum Rule: String, Hashable, Sendable, CaseIterable {
        /// Refused: the origin is opaque (WebAuthn L3 §5.1.3 step 6, §5.1.4.1 step 5).
        case opaqueOrigin
        /// Refused: the scheme is neither https nor http (WebAuthn L3 §4 "RP ID"; secure contexts).
        case insecureScheme
        /// Refused: http on a host other than localhost (WebAuthn L3 §4 "RP ID"; Secure Contexts).
        case httpNotLocalhost
        /// Refused: the origin's host is an IP address (WebAuthn L3 §5.1.3 step 7: not a valid domain).
        case ipAddressOrigin
        /// Refused: the origin's host is not a valid domain (step 7 again).
        case invalidOriginHost
        /// Accepted: no RP ID given, so it is the origin's effective domain (§5.1.3 step 8, "is not present").
        case defaultRPID
        /// Accepted: the RP ID is the origin's host (HTML "is a registrable domain suffix of or is equal to", step 4).
        case equalsHost
        /// Accepted: the RP ID is a registrable domain suffix of the host (HTML, step 5).
        case registrableSuffix
        /// Refused: the RP ID is not a valid domain (HTML, steps 1–3: empty or no host; WebAuthn: a valid domain).
        case invalidRPID
        /// Refused: the RP ID is an IP address other than the host (HTML, step 4.1).
        case ipAddressRPID
        /// Refused: the RP ID is not the host nor a suffix of it at a label boundary (HTML, step 4.2).
        case notASuffix
        /// Refused: the RP ID is a public suffix (HTML, step 4.3, first case).
        case rpIDIsPublicSuffix
        /// Refused: the RP ID lies inside the public suffix of the host, or is it (HTML, step 4.3, second case, and
        /// the assertion of step 4.4).
        case insidePublicSuffix
        /// Accepted: the RP ID's `/.well-known/webauthn` lists the origin (WebAuthn L3 §5.11.1).
        case relatedOrigin
        /// Refused: the suffix check failed and the related origins validation procedure returned false or failed
        /// (WebAuthn L3 §5.11.1).
        case relatedOriginsRefused
    }

    /// Whether the ceremony may go ahead.
    public var valid: Bool
    /// The rule that decided.
    public var rule: Rule
    /// One sentence naming the rule and the values it was applied to.
    public var reason: String
    /// The origin's serialization (`null` when opaque).
    public var origin: String
    /// The RP ID: the one given (in lower case when it parsed as a host), or the default; nil when the origin was
    /// refused before an RP ID could be taken from it.
    public var rpID: String?

    public init(valid: Bool, rule: Rule, reason: String, origin: String, rpID: String?) {
        self.valid = valid
        self.rule = rule
        self.reason = reason
        self.origin = origin
        self.rpID = rpID
    }

    public var description: String { (valid ? "valid: " : "not valid: ") + reason }
}

/// The checks a browser makes on an origin and an RP ID before it asks any authenticator: WebAuthn Level 3
/// §5.1.3 steps 6–8 (create) and §5.1.4.1 steps 5–7 (get), which are the same, with HTML's "is a registrable domain
/// suffix of or is equal to" (HTML §7.1.1.2) over the URL standard's public suffix (URL §3.2), and the related
/// origins validation procedure (WebAuthn L3 §5.11.1) when the suffix check fails.
///
/// `localhost` and its subdomains may use http: WebAuthn names `localhost` ("The origin's host is localhost and its
/// scheme is http"), and its API is exposed in secure contexts, where Secure Contexts' "Is origin potentially
/// trustworthy?" counts `*.localhost` too; Chromium's check is that one (`IsUrlPotentiallyTrustworthy`).
public enum RelyingPartyIDCheck {
    /// The verdict on `rpID` (nil: none given, the default) for `origin`, by the suffix rules alone.
    public static func evaluate(origin: WebOrigin, rpID: String?, list: PublicSuffixList) -> RelyingPartyIDVerdict {
        switch check(origin: origin, rpID: rpID, list: list) {
        case .decided(let verdict): verdict
        case .suffixCheckFailed(let verdict, _): verdict
        }
    }

    /// The verdict on `rpID` for `origin`, asking `relatedOrigins` for the RP ID's `/.well-known/webauthn` when the
    /// suffix check fails and the RP ID is a domain, as a client that supports related origin requests does.
    public static func evaluate(
        origin: WebOrigin, rpID: String?, list: PublicSuffixList, relatedOrigins: any RelatedOriginsSource,
        maximumLabels: Int = RelatedOrigins.maximumLabels
    ) async -> RelyingPartyIDVerdict {
        switch check(origin: origin, rpID: rpID, list: list) {
        case .decided(let verdict):
            return verdict
        case .suffixCheckFailed(var verdict, let requested):
            let url = RelatedOrigins.wellKnownURL(for: requested)
            let outcome: RelatedOrigins.Outcome
            do {
                let response = try await relatedOrigins.wellKnownResponse(for: requested)
                let origins = try RelatedOrigins.origins(in: response)
                outcome = RelatedOrigins.validate(
                    callerOrigin: origin, origins: origins, list: list, maximumLabels: maximumLabels)
            } catch {
                verdict.rule = .relatedOriginsRefused
                verdict.reason += "; and \(url) was refused: \(error)"
                return verdict
            }
            if outcome.matched {
                verdict.valid = true
                verdict.rule = .relatedOrigin
                verdict.reason = "\(url) lists \(origin) as a related origin (\(outcome.explanation))"
            } else {
                verdict.rule = .relatedOriginsRefused
                verdict.reason += "; and \(url) does not make it a related origin: \(outcome.explanation)"
            }
            return verdict
        }
    }

    private enum Check {
        case decided(RelyingPartyIDVerdict)
        /// HTML's check said no for an RP ID that is a domain: related origins may still allow it.
        case suffixCheckFailed(RelyingPartyIDVerdict, requested: DomainName)
    }

    private static func check(origin: WebOrigin, rpID: String?, list: PublicSuffixList) -> Check {
        let serialized = origin.description
        func refuse(_ rule: RelyingPartyIDVerdict.Rule, _ reason: String, rpID: String? = nil) -> Check {
            .decided(RelyingPartyIDVerdict(valid: false, rule: rule, reason: reason, origin: serialized, rpID: rpID))
        }
        guard case .tuple(let scheme, let host, _) = origin else {
            return refuse(
                .opaqueOrigin, "the origin of a \(origin.scheme): URL is opaque, and WebAuthn refuses opaque origins")
        }
        guard scheme == "https" || scheme == "http" else {
            return refuse(.insecureScheme, "the scheme \(scheme) is not https: WebAuthn runs only in secure contexts")
        }
        guard case .domain(let hostText) = host else {
            return refuse(
                .ipAddressOrigin, "the origin's host \(host) is an IP address, not a domain, so it can have no RP ID")
        }
        let effectiveDomain: DomainName
        do {
            effectiveDomain = try DomainName(hostText)
        } catch {
            return refuse(
                .invalidOriginHost, "the origin's host \(hostText.prefix(80)) is not a valid domain: \(error)")
        }
        if scheme == "http" {
            let isLocalhost = effectiveDomain.labels.last == "localhost"
            guard isLocalhost else {
                return refuse(
                    .httpNotLocalhost, "http is allowed only on localhost (and *.localhost), not on \(hostText)")
            }
        }
        guard let rpID else {
            return .decided(
                RelyingPartyIDVerdict(
                    valid: true, rule: .defaultRPID,
                    reason: "the RP ID defaults to the origin's effective domain \(effectiveDomain)",
                    origin: serialized,
                    rpID: effectiveDomain.text))
        }
        return registrableSuffixCheck(
            rpID: rpID, effectiveDomain: effectiveDomain, origin: serialized, list: list)
    }

    /// HTML §7.1.1.2: whether `rpID` "is a registrable domain suffix of or is equal to" the effective domain.
    private static func registrableSuffixCheck(
        rpID: String, effectiveDomain: DomainName, origin: String, list: PublicSuffixList
    ) -> Check {
        let shown = String(rpID.prefix(80))
        // Steps 1–3: the empty string, and text that is no host, are refused.
        guard !rpID.isEmpty else {
            return .decided(
                .init(valid: false, rule: .invalidRPID, reason: "the RP ID is empty", origin: origin, rpID: rpID))
        }
        let parsed: WebHost
        do {
            parsed = try WebHost(parsing: Substring(rpID))
        } catch {
            return .decided(
                .init(
                    valid: false, rule: .invalidRPID, reason: "the RP ID \(shown) is not a host: \(error)",
                    origin: origin, rpID: rpID))
        }
        guard case .domain(let text) = parsed else {
            // Step 4.1: an IP address is never equal to a domain, nor a suffix of one.
            return .decided(
                .init(
                    valid: false, rule: .ipAddressRPID, reason: "the RP ID \(parsed) is an IP address, not a domain",
                    origin: origin, rpID: parsed.description))
        }
        let requested: DomainName
        do {
            requested = try DomainName(text)
        } catch {
            return .decided(
                .init(
                    valid: false, rule: .invalidRPID, reason: "the RP ID \(shown) is not a valid domain: \(error)",
                    origin: origin, rpID: text))
        }
        let host = effectiveDomain.text
        // Step 4: equal hosts need no more checks, whatever the list says of them.
        if requested == effectiveDomain {
            return .decided(
                .init(
                    valid: true, rule: .equalsHost, reason: "the RP ID \(requested) is the origin's host",
                    origin: origin,
                    rpID: requested.text))
        }
        func failed(_ rule: RelyingPartyIDVerdict.Rule, _ reason: String) -> Check {
            .suffixCheckFailed(
                .init(valid: false, rule: rule, reason: reason, origin: origin, rpID: requested.text),
                requested: requested)
        }
        // Step 4.2: ".rpID" must end the host.
        guard effectiveDomain.isSubdomain(of: requested) else {
            return failed(
                .notASuffix, "the RP ID \(requested) is neither \(host) nor a suffix of it at a label boundary")
        }
        // Step 4.3: the RP ID must not be a public suffix, nor lie inside the host's public suffix.
        let rpIDMatch = list.match(requested)
        if rpIDMatch.publicSuffix == requested.text {
            return failed(
                .rpIDIsPublicSuffix,
                "the RP ID \(requested) is a public suffix (list rule \(rpIDMatch.ruleDescription)), so it has no "
                    + "registrable domain")
        }
        // Step 4.3's second case refuses an RP ID inside the host's public suffix, and step 4.4 asserts that the
        // public suffix lies strictly inside the RP ID. An exception rule can make the RP ID equal to the host's
        // public suffix (www.city.kawasaki.jp's is kawasaki.jp, itself registrable), breaking the assertion;
        // Chromium refuses that case ("strictly longer than the caller's public suffix"), and so does this check.
        let hostMatch = list.match(effectiveDomain)
        if hostMatch.suffixLabelCount >= requested.labels.count {
            let place =
                hostMatch.suffixLabelCount == requested.labels.count
                ? "is the public suffix"
                : "lies inside \(hostMatch.publicSuffix), the public suffix"
            return failed(
                .insidePublicSuffix,
                "the RP ID \(requested) \(place) of \(host) (list rule \(hostMatch.ruleDescription))")
        }
        return .decided(
            .init(
                valid: true, rule: .registrableSuffix,
                reason: "the RP ID \(requested) is a registrable domain suffix of \(host) (its public suffix is "
                    + "\(hostMatch.publicSuffix))", origin: origin, rpID: requested.text))
    }
}

/// The engine's RP ID check over the Public Suffix List, with related origins (§5.11) when a source for them is
/// given: what the CLI injects. A refused RP ID is `SecurityError`; an opaque origin is `NotAllowedError` (§5.1.3
/// step 6, §5.1.4.1 step 5), as a browser raises them.
public struct SuffixListRelyingPartyIDChecker: RelyingPartyIDChecker {
    public let list: PublicSuffixList
    public let relatedOrigins: (any RelatedOriginsSource)?

    public init(list: PublicSuffixList, relatedOrigins: (any RelatedOriginsSource)?) {
        self.list = list
        self.relatedOrigins = relatedOrigins
    }

    public func check(origin: String, requested: String?) async throws(ClientError) -> RelyingPartyIDDecision {
        let parsed: WebOrigin
        do {
            parsed = try WebOrigin(url: origin)
        } catch {
            throw ClientError(.relyingPartyIDRefused("the origin \(String(origin.prefix(200))) is not a URL: \(error)"))
        }
        let verdict =
            if let relatedOrigins {
                await RelyingPartyIDCheck.evaluate(
                    origin: parsed, rpID: requested, list: list, relatedOrigins: relatedOrigins)
            } else {
                RelyingPartyIDCheck.evaluate(origin: parsed, rpID: requested, list: list)
            }
        guard verdict.valid, let relyingPartyID = verdict.rpID else {
            if verdict.rule == .opaqueOrigin { throw ClientError(.noEligibleAuthenticator(verdict.reason)) }
            throw ClientError(.relyingPartyIDRefused(verdict.reason))
        }
        return RelyingPartyIDDecision(origin: verdict.origin, relyingPartyID: relyingPartyID)
    }
}
