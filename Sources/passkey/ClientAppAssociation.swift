import ArgumentParser
import AssociatedDomains
import AssociatedDomainsIO
import Foundation
import SignedFilesIO
import WebAuthnClient
import WebAuthnClientIO
import PasskeyFilesIO

/// `--app` and `--android-app`: asking as a native app instead of a web page. The RP ID's domain must vouch for the
/// app, as the platforms require before an app may use the RP's passkeys: Apple's `webcredentials` association
/// (the approval table beside the store, checked now when it has no entry or a pending one), Android's
/// `delegate_permission/common.get_login_creds` in `https://RPID/.well-known/assetlinks.json`.
struct AppAssociationOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Ask as this Apple app (TEAMID.BUNDLEID): the RP ID's domain must approve it for webcredentials.",
            valueName: "id"))
    var app: String?

    @Option(
        name: .customLong("android-app"),
        help: ArgumentHelp(
            "Ask as this Android app (PACKAGE:SHA256-FINGERPRINT): the RP ID's assetlinks.json must grant it "
                + "get_login_creds.", valueName: "package:fingerprint"))
    var androidApp: String?

    @Option(
        name: .customLong("app-ca"),
        help: ArgumentHelp("A PEM file of CAs to trust for the app checks, besides the system's.", visibility: .hidden))
    var appCA: String?

    @Option(
        name: .customLong("app-port"),
        help: ArgumentHelp("The port the RP ID's files are fetched from, for tests.", visibility: .hidden))
    var appPort: Int?

    func validate() throws {
        if let app {
            do { _ = try AppID(app) } catch { throw ValidationError("--app: \(error.message)") }
        }
        if let androidApp { _ = try Self.androidApp(androidApp) }
        if let appPort, !(1...65_535).contains(appPort) { throw ValidationError("--app-port must be 1–65535.") }
    }

    /// Refuses the ceremony (SecurityError, with the platform's wording) unless every app given is associated with
    /// the RP ID: `rpID` from the options, else the origin's host.
    func check(rpID: String?, origin: String, store: StoreOptions) async throws {
        guard app != nil || androidApp != nil else { return }
        guard let domain = rpID ?? URLComponents(string: origin)?.host?.lowercased(), !domain.isEmpty else {
            throw ClientError(.relyingPartyIDRefused("no RP ID to check the app against"))
        }
        if let app { try await checkApple(try AppID(app), domain: domain, store: store) }
        if let androidApp { try await checkAndroid(try Self.androidApp(androidApp), domain: domain) }
    }

    private func checkApple(_ app: AppID, domain: String, store: StoreOptions) async throws {
        let entitlement: Entitlement
        do {
            entitlement = try Entitlement(
                service: .webcredentials, domain: appPort.map { "\(domain):\($0)" } ?? domain)
        } catch {
            throw ClientError(.relyingPartyIDRefused("\(domain) is not a domain an app can be associated with"))
        }
        let file = ApprovalTableFile(url: store.files.domainApprovals)
        var entry = try file.load().entry(entitlement, app: app)
        if entry == nil || entry?.state == .pending {
            let checker = try Passkey.Domains.Check.checker(ca: appCA)
            let verdict = await checker.run(
                DomainCheck(
                    host: entitlement.host, port: entitlement.effectivePort, app: app, service: .webcredentials))
            try file.update { $0.record(verdict, entitlement: entitlement, app: app, at: Date()) }
            entry = try file.load().entry(entitlement, app: app)
        }
        guard let entry, entry.state == .approved else {
            throw ClientError(
                .relyingPartyIDRefused(
                    "Application with identifier \(app) is not associated with domain \(domain) ("
                        + "\(entitlement): \(entry?.state.rawValue ?? "unknown"), \(entry?.reason ?? "not checked"))"))
        }
    }

    private func checkAndroid(_ android: (package: String, fingerprint: [UInt8]), domain: String) async throws {
        let url = HTTPSFetcher.url(host: domain, port: appPort ?? 443, path: "/.well-known/assetlinks.json")
        let refused = { (why: String) in
            ClientError(
                .relyingPartyIDRefused(
                    "the Android app \(android.package) is not associated with \(domain): \(why)"))
        }
        let response: WellKnownResponse
        do {
            response = try await HTTPSFetcher(additionalCAFile: appCA).get(
                url, accept: "application/json", userAgent: "passkey (asset links)", limit: AssetLinks.maximumBytes)
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

    /// `PACKAGE:FINGERPRINT`, the fingerprint as 32 colon-separated hexadecimal pairs.
    static func androidApp(_ text: String) throws -> (package: String, fingerprint: [UInt8]) {
        guard let colon = text.firstIndex(of: ":"), colon != text.startIndex else {
            throw ValidationError("--android-app takes PACKAGE:SHA256-FINGERPRINT (AA:BB:…, 32 pairs).")
        }
        let package = String(text[..<colon])
        guard package.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "_") }) else {
            throw ValidationError("--android-app: \(package.debugDescription) is not a package name.")
        }
        do {
            return (package, try AssetLinks.fingerprint(String(text[text.index(after: colon)...])))
        } catch {
            throw ValidationError("--android-app: \(error.message)")
        }
    }
}
