import AssociatedDomains
import AssociatedDomainsIO
import Foundation
import PasskeyProvider
import Synchronization
import TestSupport
import Testing
import WebAuthnClient

/// `--app` and `--android-app` in process: the association rules of `AppAssociationCheck` with a scripted Apple
/// check and a scripted HTTPS fetch; the approval table is a real file in a temporary directory.
struct ComputerAppAssociationTests {
    static let app = "ABCDE12345.com.example.app"
    static let fingerprint = [UInt8](repeating: 0xAB, count: 32)
    static let fingerprintText = Array(repeating: "AB", count: 32).joined(separator: ":")

    /// What the checks were asked, and what they answer.
    final class Network: Sendable {
        let appleChecks = Mutex<[String]>([])
        let fetched = Mutex<[String]>([])
        let verdict: ApprovalState
        let assetLinks: WellKnownResponse

        init(verdict: ApprovalState = .approved, assetLinks: WellKnownResponse = Network.granting) {
            self.verdict = verdict
            self.assetLinks = assetLinks
        }

        static let granting = WellKnownResponse(
            status: 200, contentType: "application/json",
            body: Array(
                """
                [{"relation": ["delegate_permission/common.get_login_creds"],
                  "target": {"namespace": "android_app", "package_name": "com.example.app",
                             "sha256_cert_fingerprints": ["\(ComputerAppAssociationTests.fingerprintText)"]}}]
                """.utf8))

        func checker(_ directory: TemporaryDirectory) -> AppAssociationCheck {
            AppAssociationCheck(
                approvals: ApprovalTableFile(url: directory.url("domain-approvals.json")),
                checkApple: { check in
                    self.appleChecks.withLock { $0.append(check.url) }
                    return CheckVerdict(state: self.verdict, reason: "scripted \(self.verdict)", url: check.url)
                },
                fetch: { url in
                    self.fetched.withLock { $0.append(url) }
                    return self.assetLinks
                })
        }
    }

    static func refusal(_ body: () async throws -> Void) async -> String? {
        do {
            try await body()
            return nil
        } catch let error as ClientError {
            return error.description
        } catch {
            return "unexpected \(error)"
        }
    }

    @Test func noAppChecksNothing() async throws {
        let directory = try TemporaryDirectory()
        let network = Network(verdict: .denied)
        try await network.checker(directory).check(AppIdentity(), rpID: nil, origin: "https://example.com")
        #expect(network.appleChecks.withLock { $0 }.isEmpty)
        #expect(network.fetched.withLock { $0 }.isEmpty)
    }

    /// An approved association is kept in the table and not checked again.
    @Test func appleApprovalIsCheckedOnceAndKept() async throws {
        let directory = try TemporaryDirectory()
        let network = Network(verdict: .approved)
        let apps = AppIdentity(apple: try AppID(Self.app))
        try await network.checker(directory).check(apps, rpID: "example.com", origin: "https://example.com")
        try await network.checker(directory).check(apps, rpID: "example.com", origin: "https://example.com")
        #expect(
            network.appleChecks.withLock { $0 } == ["https://example.com/.well-known/apple-app-site-association"])
    }

    /// Without an RP ID in the options, the origin's host is the domain checked.
    @Test func appleDenialIsASecurityErrorNamingTheApp() async throws {
        let directory = try TemporaryDirectory()
        let network = Network(verdict: .denied)
        let apps = AppIdentity(apple: try AppID(Self.app))
        let refusal = await Self.refusal {
            try await network.checker(directory).check(apps, rpID: nil, origin: "https://Example.com")
        }
        let text = try #require(refusal)
        #expect(text.hasPrefix("SecurityError: "))
        #expect(
            text.contains(
                "Application with identifier \(Self.app) is not associated with domain example.com "
                    + "(webcredentials:example.com: denied, scripted denied)"))
    }

    @Test func androidIsGrantedByAssetLinks() async throws {
        let directory = try TemporaryDirectory()
        let network = Network()
        let apps = AppIdentity(android: .init(package: "com.example.app", fingerprint: Self.fingerprint))
        try await network.checker(directory).check(apps, rpID: "example.com", origin: "https://example.com")
        #expect(network.fetched.withLock { $0 } == ["https://example.com/.well-known/assetlinks.json"])
        #expect(network.appleChecks.withLock { $0 }.isEmpty)

        let other = AppIdentity(android: .init(package: "com.example.other", fingerprint: Self.fingerprint))
        let refusal = await Self.refusal {
            try await network.checker(directory).check(other, rpID: "example.com", origin: "https://example.com")
        }
        #expect(
            refusal?.contains("the Android app com.example.other is not associated with example.com: ") == true)
    }

    @Test func androidRefusedWhenTheFileIsMissing() async throws {
        let directory = try TemporaryDirectory()
        let network = Network(assetLinks: WellKnownResponse(status: 404, contentType: nil, body: []))
        let apps = AppIdentity(android: .init(package: "com.example.app", fingerprint: Self.fingerprint))
        let refusal = await Self.refusal {
            try await network.checker(directory).check(apps, rpID: "example.com", origin: "https://example.com")
        }
        #expect(
            refusal?.hasSuffix(
                "the Android app com.example.app is not associated with example.com: "
                    + "https://example.com/.well-known/assetlinks.json answered 404") == true)
    }

    @Test func noDomainToCheckIsRefused() async throws {
        let directory = try TemporaryDirectory()
        let apps = AppIdentity(apple: try AppID(Self.app))
        let refusal = await Self.refusal {
            try await Network().checker(directory).check(apps, rpID: nil, origin: "not a url")
        }
        #expect(refusal?.hasSuffix("no RP ID to check the app against") == true)
    }
}
