import AssociatedDomains
import AssociatedDomainsIO
import Foundation
import WebAuthnClient
import WebAuthnClientIO

/// The native apps a browser command asks as (`--app`, `--android-app`), instead of a web page.
public struct AppIdentity: Hashable, Sendable {
    /// An Android app: its package name and the SHA-256 fingerprint of its signing certificate.
    public struct Android: Hashable, Sendable {
        public var package: String
        public var fingerprint: [UInt8]

        public init(package: String, fingerprint: [UInt8]) {
            self.package = package
            self.fingerprint = fingerprint
        }
    }

    public var apple: AppID?
    public var android: Android?

    public init(apple: AppID? = nil, android: Android? = nil) {
        self.apple = apple
        self.android = android
    }
}

/// Whether the RP ID's domain vouches for the apps asking, as the platforms require before an app may use the
/// RP's passkeys: Apple's `webcredentials` association (the approval table beside the store, checked now when it
/// has no entry or a pending one, and the verdict kept), Android's `delegate_permission/common.get_login_creds`
/// in `https://RPID/.well-known/assetlinks.json` (fetched every time, as Android's verifier does on install).
///
/// A refusal is the `SecurityError` a browser raises (`ClientError.relyingPartyIDRefused`), not a `ProviderError`:
/// it is the ceremony's outcome, with the exception's exit status, in the platform's wording.
public struct AppAssociationCheck: Sendable {
    /// The approval table (`PasskeyFiles.domainApprovals`).
    public let approvals: ApprovalTableFile
    /// Runs one Apple association check (the AASA file over HTTPS); throws only when it cannot start (a CA file
    /// that cannot be read), which is the command's failure rather than a verdict.
    public let checkApple: @Sendable (DomainCheck) async throws -> CheckVerdict
    /// GETs an HTTPS URL (the asset links file).
    public let fetch: @Sendable (_ url: String) async throws -> WellKnownResponse
    /// The port the RP ID's files are served on, for tests (`--app-port`); nil for 443.
    public let port: Int?
    public let now: @Sendable () -> Date

    public init(
        approvals: ApprovalTableFile, port: Int? = nil,
        checkApple: @escaping @Sendable (DomainCheck) async throws -> CheckVerdict,
        fetch: @escaping @Sendable (_ url: String) async throws -> WellKnownResponse,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.approvals = approvals
        self.port = port
        self.checkApple = checkApple
        self.fetch = fetch
        self.now = now
    }

    /// Refuses the ceremony unless every app given is associated with the RP ID: `rpID` from the options, else the
    /// origin's host. Nothing is checked, or fetched, when no app is given.
    public func check(_ apps: AppIdentity, rpID: String?, origin: String) async throws {
        guard apps.apple != nil || apps.android != nil else { return }
        guard let domain = rpID ?? URLComponents(string: origin)?.host?.lowercased(), !domain.isEmpty else {
            throw ClientError(.relyingPartyIDRefused("no RP ID to check the app against"))
        }
        if let apple = apps.apple { try await verifyApple(apple, domain: domain) }
        if let android = apps.android { try await verifyAndroid(android, domain: domain) }
    }

    private func verifyApple(_ app: AppID, domain: String) async throws {
        let entitlement: Entitlement
        do {
            entitlement = try Entitlement(service: .webcredentials, domain: port.map { "\(domain):\($0)" } ?? domain)
        } catch {
            throw ClientError(.relyingPartyIDRefused("\(domain) is not a domain an app can be associated with"))
        }
        var entry = try approvals.load().entry(entitlement, app: app)
        if entry == nil || entry?.state == .pending {
            let verdict = try await checkApple(
                DomainCheck(
                    host: entitlement.host, port: entitlement.effectivePort, app: app, service: .webcredentials))
            let time = now()
            try approvals.update { try $0.record(verdict, entitlement: entitlement, app: app, at: time) }
            entry = try approvals.load().entry(entitlement, app: app)
        }
        guard let entry, entry.state == .approved else {
            throw ClientError(
                .relyingPartyIDRefused(
                    "Application with identifier \(app) is not associated with domain \(domain) ("
                        + "\(entitlement): \(entry?.state.rawValue ?? "unknown"), \(entry?.reason ?? "not checked"))"))
        }
    }

    private func verifyAndroid(_ android: AppIdentity.Android, domain: String) async throws {
        let url = HTTPSFetcher.url(host: domain, port: port ?? 443, path: "/.well-known/assetlinks.json")
        let refused = { (why: String) in
            ClientError(
                .relyingPartyIDRefused("the Android app \(android.package) is not associated with \(domain): \(why)"))
        }
        let response: WellKnownResponse
        do {
            response = try await fetch(url)
        } catch {
            throw refused("\(url): \(error)")
        }
        guard response.status == 200 else { throw refused("\(url) answered \(response.status)") }
        let links: AssetLinks
        do {
            links = try AssetLinks(json: response.body)
        } catch {
            throw refused("\(url) is not a valid asset links file: \(error.message)")
        }
        if let reason = links.reasonNotGranted(
            AssetLinks.getLoginCredentials, packageName: android.package, fingerprint: android.fingerprint)
        {
            throw refused(reason)
        }
    }
}
