import ArgumentParser
import AssociatedDomains
import AssociatedDomainsIO
import Foundation
import SignedFilesIO
import WebAuthnClient
import WebAuthnClientIO
import PasskeyFilesIO
import PasskeyProvider

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
    /// the RP ID: `rpID` from the options, else the origin's host. The rules are the provider's
    /// `AppAssociationCheck`; here are the approval table beside the store, the HTTPS checker and `--app-ca`.
    func check(rpID: String?, origin: String, store: StoreOptions) async throws {
        guard app != nil || androidApp != nil else { return }
        let apps = AppIdentity(
            apple: try app.map { try AppID($0) },
            android: try androidApp.map { try Self.androidApp($0) }.map {
                AppIdentity.Android(package: $0.package, fingerprint: $0.fingerprint)
            })
        let appCA = appCA
        let checker = AppAssociationCheck(
            approvals: ApprovalTableFile(url: store.files.domainApprovals), port: appPort,
            checkApple: { check in await (try Passkey.Domains.Check.checker(ca: appCA)).run(check) },
            fetch: { url in
                try await HTTPSFetcher(additionalCAFile: appCA).get(
                    url, accept: "application/json", userAgent: "passkey (asset links)",
                    limit: AssetLinks.maximumBytes)
            })
        try await checker.check(apps, rpID: rpID, origin: origin)
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
