import AssociatedDomains
import AssociatedDomainsIO
import Foundation
import NIOHTTP1
import SignedFilesIO
import Synchronization
import TestSupport
import Testing
import WebAuthnClientIO

/// `passkey domains check`'s fetches against a local HTTPS server (TestSupport's test CA, `localhost`), one case per
/// answer a site can give, each ending in its state. Waits between tries are recorded, not slept.
struct DomainCheckerTests {
    static let app = try! AppID("ABCDE12345.com.example.app")
    static let wellKnown = "/.well-known/apple-app-site-association"
    static let root = "/apple-app-site-association"
    static let naming = #"{"webcredentials": {"apps": ["ABCDE12345.com.example.app"]}}"#
    static let notNaming = #"{"webcredentials": {"apps": ["ZZZZZ99999.com.example.other"]}}"#

    /// The waits a check asked for.
    final class Waits: Sendable {
        let list = Mutex<[Duration]>([])
    }

    static func check(_ ca: TestCA, _ server: WellKnownServer, waits: Waits = Waits()) async throws -> CheckVerdict {
        let checker = DomainChecker(
            fetcher: HTTPSFetcher(additionalCAFile: ca.caCertificate),
            trust: TrustAnchors(
                systemStore: false, certificatesPEM: Array(try Data(contentsOf: URL(fileURLWithPath: ca.caCertificate)))
            ),
            sleep: { duration in waits.list.withLock { $0.append(duration) } })
        return await checker.run(
            DomainCheck(host: "localhost", port: server.port, app: app, service: .webcredentials))
    }

    static func signed(_ content: String, ca: TestCA, certificate: String? = nil, key: String? = nil) throws
        -> [UInt8]
    {
        try SignedFile.sign(
            Array(content.utf8),
            certificatePEM: Array(try Data(contentsOf: URL(fileURLWithPath: certificate ?? ca.certificate))),
            privateKeyPEM: Array(try Data(contentsOf: URL(fileURLWithPath: key ?? ca.privateKey))))
    }

    @Test func aPlainFileNamingTheAppIsApproved() async throws {
        let ca = try await TestCA.make()
        try await WellKnownServer.with(ca, reply: { _ in .init(body: Self.naming) }) { server in
            let verdict = try await Self.check(ca, server)
            #expect(verdict.state == .approved, "\(verdict.reason)")
            #expect(verdict.status == 200)
            #expect(verdict.url == "https://localhost:\(server.port)\(Self.wellKnown)")
            #expect(verdict.file == Array(Self.naming.utf8))
            let request = try #require(server.requests.first)
            #expect(request.uri == Self.wellKnown)
            for header in ["Cookie", "Referer", "Authorization"] { #expect(!request.headers.contains(name: header)) }
        }
    }

    @Test func aFileWithoutTheAppIsDenied() async throws {
        let ca = try await TestCA.make()
        try await WellKnownServer.with(ca, reply: { _ in .init(body: Self.notNaming) }) { server in
            let verdict = try await Self.check(ca, server)
            #expect(verdict.state == .denied)
            #expect(verdict.reason.contains("does not list ABCDE12345.com.example.app"), "\(verdict.reason)")
        }
    }

    @Test(arguments: ["application/pkcs7-mime", "application/octet-stream"])
    func aSignedFileIsVerifiedAndRead(type: String) async throws {
        let ca = try await TestCA.make()
        let body = try Self.signed(Self.naming, ca: ca)
        try await WellKnownServer.with(ca, reply: { _ in .init(headers: [("Content-Type", type)], bytes: body) }) {
            server in
            let verdict = try await Self.check(ca, server)
            #expect(verdict.state == .approved, "\(verdict.reason)")
            #expect(verdict.signer == "CN=localhost")
            #expect(verdict.file == Array(Self.naming.utf8))
        }
    }

    @Test func aFileSignedForAnotherDomainIsDenied() async throws {
        let ca = try await TestCA.make()
        // A certificate the same CA issued for other.example.
        let key = ca.directory.file("other-key.pem")
        let certificate = ca.directory.file("other.pem")
        let request = ca.directory.file("other.csr")
        let ext = try ca.directory.write(
            Array(
                "keyUsage = critical, digitalSignature\nextendedKeyUsage = serverAuth\nsubjectAltName = DNS:other.example\n"
                    .utf8),
            to: "other.ext")
        for arguments in [
            [
                "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out",
                request, "-subj", "/CN=other.example",
            ],
            [
                "x509", "-req", "-in", request, "-CA", ca.caCertificate, "-CAkey", ca.directory.file("ca-key.pem"),
                "-set_serial", "9", "-days", "1", "-extfile", ext, "-out", certificate,
            ],
        ] {
            let result = try await ChildProcess.run(try TestCA.opensslPath(), arguments, timeout: .seconds(60))
            #expect(result.termination.exitStatus == 0, "\(result.stderr)")
        }
        let body = try Self.signed(Self.naming, ca: ca, certificate: certificate, key: key)
        try await WellKnownServer.with(
            ca, reply: { _ in .init(headers: [("Content-Type", "application/pkcs7-mime")], bytes: body) }
        ) { server in
            let verdict = try await Self.check(ca, server)
            #expect(verdict.state == .denied)
            #expect(verdict.reason.contains("is not valid for localhost"), "\(verdict.reason)")
            #expect(verdict.reason.contains("other.example"), "\(verdict.reason)")
        }
    }

    @Test func aDamagedSignedFileIsDenied() async throws {
        let ca = try await TestCA.make()
        var damaged = try Self.signed(Self.naming, ca: ca)
        damaged[damaged.count / 2] ^= 0x40
        let body = damaged
        try await WellKnownServer.with(
            ca, reply: { _ in .init(headers: [("Content-Type", "application/pkcs7-mime")], bytes: body) }
        ) { server in
            let verdict = try await Self.check(ca, server)
            #expect(verdict.state == .denied)
            #expect(verdict.reason.contains("the signed file at"), "\(verdict.reason)")
        }
    }

    @Test(arguments: [301, 302, 307, 308])
    func aRedirectIsDeniedWithoutFollowingIt(status: Int) async throws {
        let ca = try await TestCA.make()
        let reply: @Sendable (HTTPRequestHead) -> WellKnownServer.Reply? = { head in
            head.uri == "/elsewhere"
                ? .init(body: Self.naming) : .init(status: status, headers: [("Location", "/elsewhere")], body: "")
        }
        try await WellKnownServer.with(ca, reply: reply) { server in
            let verdict = try await Self.check(ca, server)
            #expect(verdict.state == .denied)
            #expect(verdict.status == status)
            #expect(verdict.reason.contains("redirects are never followed"))
            #expect(server.requests.map(\.uri) == [Self.wellKnown, Self.root])
        }
    }

    @Test func notFoundFallsBackToTheOlderPlace() async throws {
        let ca = try await TestCA.make()
        let reply: @Sendable (HTTPRequestHead) -> WellKnownServer.Reply? = { head in
            head.uri == Self.root ? .init(body: Self.naming) : .init(status: 404, body: "not found")
        }
        try await WellKnownServer.with(ca, reply: reply) { server in
            let verdict = try await Self.check(ca, server)
            #expect(verdict.state == .approved, "\(verdict.reason)")
            #expect(verdict.url.hasSuffix(Self.root))
        }
        try await WellKnownServer.with(ca, reply: { _ in .init(status: 404, body: "") }) { server in
            let verdict = try await Self.check(ca, server)
            #expect(verdict.state == .denied)
            #expect(verdict.status == 404)
            #expect(server.requests.map(\.uri) == [Self.wellKnown, Self.root])
        }
    }

    @Test func aServerErrorThenTheFileIsApproved() async throws {
        let ca = try await TestCA.make()
        let count = Mutex(0)
        let reply: @Sendable (HTTPRequestHead) -> WellKnownServer.Reply? = { _ in
            count.withLock {
                $0 += 1; return $0
            } < 3 ? .init(status: 503, body: "busy") : .init(body: Self.naming)
        }
        try await WellKnownServer.with(ca, reply: reply) { server in
            let waits = Waits()
            let verdict = try await Self.check(ca, server, waits: waits)
            #expect(verdict.state == .approved, "\(verdict.reason)")
            #expect(waits.list.withLock { $0 } == [.seconds(2), .seconds(4)])
            #expect(server.requests.count == 3)
        }
    }

    @Test func aServerErrorForeverIsPending() async throws {
        let ca = try await TestCA.make()
        try await WellKnownServer.with(ca, reply: { _ in .init(status: 500, body: "down") }) { server in
            let verdict = try await Self.check(ca, server)
            #expect(verdict.state == .pending)
            #expect(verdict.status == 500)
            #expect(server.requests.map(\.uri) == Array(repeating: Self.wellKnown, count: 3))
        }
    }

    @Test func anHTMLPageIsDiagnosed() async throws {
        let ca = try await TestCA.make()
        let page = "<!doctype html><html><body><div id=root></div></body></html>"
        try await WellKnownServer.with(
            ca, reply: { _ in .init(headers: [("Content-Type", "text/html; charset=utf-8")], body: page) }
        ) { server in
            let verdict = try await Self.check(ca, server)
            #expect(verdict.state == .denied)
            #expect(verdict.reason.contains("the server returned an HTML page"), "\(verdict.reason)")
        }
    }

    @Test(arguments: [false, true])
    func anOversizeFileIsDenied(chunked: Bool) async throws {
        let ca = try await TestCA.make()
        let big = #"{"webcredentials": {"apps": []}}"# + String(repeating: " ", count: DomainCheck.maximumFileSize)
        try await WellKnownServer.with(ca, reply: { _ in .init(body: big, chunked: chunked) }) { server in
            let verdict = try await Self.check(ca, server)
            #expect(verdict.state == .denied)
            #expect(verdict.reason.contains("over the 128 KB limit"), "\(verdict.reason)")
        }
    }

    @Test func anUntrustedServerIsTriedAgainThenPending() async throws {
        let ca = try await TestCA.make()
        let other = try await TestCA.make()
        try await WellKnownServer.with(other, reply: { _ in .init(body: Self.naming) }) { server in
            let verdict = try await Self.check(ca, server)
            #expect(verdict.state == .pending)
            #expect(verdict.status == nil)
            #expect(server.requests.isEmpty)
        }
    }
}
