import Foundation
import SignedFilesIO
import TestSupport
import Testing

/// CMS both ways against the `openssl` command: files it signs (`smime -sign -nodetach -outform DER`, as Apple's
/// documentation shows for the signed apple-app-site-association) verify here; files signed here pass
/// `openssl cms -verify`; every reason to refuse has its own code.
struct SignedFileTests {
    static let content = Array(#"{"webcredentials": {"apps": ["ABCDE12345.com.example.app"]}}"#.utf8)

    /// One set of test keys and certificates for the whole suite (made once: `openssl` is slow on a loaded machine).
    static let pki = Task { try await TestPKI.make() }

    @Test func aFileOpenSSLSignsVerifiesWithItsContent() async throws {
        let pki = try await Self.pki.value
        let der = try await pki.opensslSign(Self.content, leaf: "leaf")
        #expect(SignedFile.looksLikeDER(der))
        let verified = try SignedFile.verify(der, domain: "example.com", trust: pki.trust)
        #expect(verified.content == Self.content)
        #expect(verified.signer == "CN=example.com")
        #expect(verified.signerNames == ["example.com", "www.example.com"])
        // Another name the certificate carries, and the wildcard certificate for a subdomain.
        #expect(try SignedFile.verify(der, domain: "www.example.com", trust: pki.trust).content == Self.content)
        let wildcard = try await pki.opensslSign(Self.content, leaf: "wildcard")
        #expect(try SignedFile.verify(wildcard, domain: "app.example.com", trust: pki.trust).content == Self.content)
        #expect(throws: SignedFileError(.wrongDomain, "")) {
            try SignedFile.verify(wildcard, domain: "a.b.example.com", trust: pki.trust)
        }
    }

    @Test func withoutBinaryOpenSSLSignsTheTextWithCRLFLineEnds() async throws {
        // Apple's documented command has no -binary: smime then signs the text with CRLF line ends, which is the
        // content the file carries (still JSON).
        let pki = try await Self.pki.value
        let text = Array("{\n  \"webcredentials\": {\"apps\": []}\n}\n".utf8)
        let der = try await pki.opensslSign(text, leaf: "leaf", binary: false)
        let content = try SignedFile.verify(der, domain: "example.com", trust: pki.trust).content
        #expect(String(decoding: content, as: UTF8.self) == "{\r\n  \"webcredentials\": {\"apps\": []}\r\n}\r\n")
    }

    @Test func aFileSignedHereVerifiesWithOpenSSL() async throws {
        let pki = try await Self.pki.value
        let der = try pki.sign(Self.content, leaf: "leaf", chain: true)
        let file = try pki.directory.write(der, to: "signed-here.der")
        let out = pki.directory.file("signed-here.out")
        let result = try await pki.openssl([
            "cms", "-verify", "-inform", "DER", "-in", file, "-CAfile", pki.file("root"), "-purpose", "sslserver",
            "-out", out,
        ])
        #expect(result.termination.exitStatus == 0, "\(result.stderr)")
        #expect(Array(try Data(contentsOf: URL(fileURLWithPath: out))) == Self.content)
        // The older PKCS #7 verifier reads it too.
        let smime = try await pki.openssl([
            "smime", "-verify", "-inform", "DER", "-in", file, "-CAfile", pki.file("root"), "-purpose", "sslserver",
            "-binary",
        ])
        #expect(smime.termination.exitStatus == 0, "\(smime.stderr)")
        #expect(smime.stdout == String(decoding: Self.content, as: UTF8.self))
        // And it verifies here.
        #expect(try SignedFile.verify(der, domain: "example.com", trust: pki.trust).content == Self.content)
    }

    @Test func theChainInTheFileReachesTheRoot() async throws {
        let pki = try await Self.pki.value
        // Without the intermediate the leaf cannot reach the root.
        let bare = try pki.sign(Self.content, leaf: "leaf", chain: false)
        #expect(throws: SignedFileError(.untrusted, "")) {
            try SignedFile.verify(bare, domain: "example.com", trust: pki.trust)
        }
        // Trusting the intermediate itself is enough.
        let intermediate = try TrustAnchors(systemStore: false, certificatesPEM: pki.pem("intermediate"))
        #expect(try SignedFile.verify(bare, domain: "example.com", trust: intermediate).content == Self.content)
    }

    @Test func aCertificateForAnotherDomainIsRefused() async throws {
        let pki = try await Self.pki.value
        let der = try await pki.opensslSign(Self.content, leaf: "other")
        #expect(throws: SignedFileError(.wrongDomain, "")) {
            try SignedFile.verify(der, domain: "example.com", trust: pki.trust)
        }
        do {
            _ = try SignedFile.verify(der, domain: "example.com", trust: pki.trust)
        } catch {
            #expect(error.description.contains("other.example"), "\(error)")
            #expect(error.description.contains("not valid for example.com"), "\(error)")
        }
        // example.com is not www.example.com's certificate either way round, and a port is not a host.
        let www = try pki.sign(Self.content, leaf: "www", chain: true)
        for domain in ["example.com", "example.com:443", "", "127.0.0.1"] {
            #expect(throws: SignedFileError(.wrongDomain, ""), "\(domain)") {
                try SignedFile.verify(www, domain: domain, trust: pki.trust)
            }
        }
    }

    @Test func anUntrustedRootIsRefused() async throws {
        let pki = try await Self.pki.value
        let der = try await pki.opensslSign(Self.content, leaf: "stranger")
        // The system store does not know the test roots; nor does the other test root.
        for trust in [TrustAnchors.system, pki.trust] {
            #expect(throws: SignedFileError(.untrusted, "")) {
                try SignedFile.verify(der, domain: "example.com", trust: trust)
            }
        }
        #expect(throws: SignedFileError(.untrusted, "")) {
            try SignedFile.verify(
                try pki.sign(Self.content, leaf: "leaf", chain: true), domain: "example.com", trust: .system)
        }
    }

    @Test func anExpiredCertificateIsRefused() async throws {
        let pki = try await Self.pki.value
        let der = try pki.sign(Self.content, leaf: "leaf", chain: true)
        // The certificates are valid for two days from now.
        let later = Date().addingTimeInterval(5 * 86_400)
        #expect(throws: SignedFileError(.expired, "")) {
            try SignedFile.verify(der, domain: "example.com", trust: pki.trust, at: later)
        }
        let earlier = Date().addingTimeInterval(-5 * 86_400)
        #expect(throws: SignedFileError(.expired, "")) {
            try SignedFile.verify(der, domain: "example.com", trust: pki.trust, at: earlier)
        }
        #expect(try SignedFile.verify(der, domain: "example.com", trust: pki.trust, at: Date()).content == Self.content)
    }

    @Test func aCertificateThatIsNotForTLSServersIsRefused() async throws {
        let pki = try await Self.pki.value
        let der = try pki.sign(Self.content, leaf: "email", chain: true)
        #expect(throws: SignedFileError(.certificate, "")) {
            try SignedFile.verify(der, domain: "example.com", trust: pki.trust)
        }
    }

    @Test func tamperedContentIsRefused() async throws {
        let pki = try await Self.pki.value
        let der = try await pki.opensslSign(Self.content, leaf: "leaf")
        let needle = Array("ABCDE12345".utf8)
        let at = try #require(
            (0...(der.count - needle.count)).first { Array(der[$0..<($0 + needle.count)]) == needle })
        var tampered = der
        tampered[at] = UInt8(ascii: "Z")
        #expect(throws: SignedFileError(.signature, "")) {
            try SignedFile.verify(tampered, domain: "example.com", trust: pki.trust)
        }
    }

    @Test func aDetachedSignatureIsRefused() async throws {
        let pki = try await Self.pki.value
        let input = try pki.directory.write(Self.content, to: "detached.json")
        let out = pki.directory.file("detached.der")
        let result = try await pki.openssl([
            "smime", "-sign", "-binary", "-in", input, "-signer", pki.file("leaf"), "-inkey", pki.key("leaf"),
            "-outform", "DER", "-out", out,
        ])
        #expect(result.termination.exitStatus == 0, "\(result.stderr)")
        let der = Array(try Data(contentsOf: URL(fileURLWithPath: out)))
        #expect(throws: SignedFileError(.detached, "")) {
            try SignedFile.verify(der, domain: "example.com", trust: pki.trust)
        }
    }

    @Test func otherCMSTypesAreRefused() async throws {
        let pki = try await Self.pki.value
        let input = try pki.directory.write(Self.content, to: "data.json")
        let out = pki.directory.file("data.der")
        let result = try await pki.openssl(["cms", "-data_create", "-in", input, "-outform", "DER", "-out", out])
        #expect(result.termination.exitStatus == 0, "\(result.stderr)")
        let der = Array(try Data(contentsOf: URL(fileURLWithPath: out)))
        #expect(throws: SignedFileError(.notSignedData, "")) {
            try SignedFile.verify(der, domain: "example.com", trust: pki.trust)
        }
    }

    @Test(arguments: [
        [], [0x30], [0x30, 0x80], Array("{\"applinks\": {}}".utf8), [0x30, 0x03, 0x02, 0x01, 0x01],
        [UInt8](repeating: 0x30, count: 4096),
    ])
    func malformedInputIsRefused(input: [UInt8]) async throws {
        #expect(throws: SignedFileError(.malformed, "")) {
            try SignedFile.verify(input, domain: "example.com", trust: .system)
        }
    }

    @Test func truncatedOrExtendedFilesAreRefused() async throws {
        let pki = try await Self.pki.value
        let der = try pki.sign(Self.content, leaf: "leaf", chain: true)
        for count in stride(from: 0, to: der.count, by: max(1, der.count / 40)) {
            #expect(throws: SignedFileError.self) {
                try SignedFile.verify(Array(der.prefix(count)), domain: "example.com", trust: pki.trust)
            }
        }
        #expect(throws: SignedFileError(.malformed, "")) {
            try SignedFile.verify(der + [0], domain: "example.com", trust: pki.trust)
        }
    }

    @Test func signingRefusesKeysThatCannotBeUsed() async throws {
        let pki = try await Self.pki.value
        let certificate = try pki.pem("leaf")
        #expect(throws: SignedFileError(.privateKey, "")) {
            try SignedFile.sign(Self.content, certificatePEM: certificate, privateKeyPEM: pki.keyPEM("other"))
        }
        #expect(throws: SignedFileError(.privateKey, "")) {
            try SignedFile.sign(Self.content, certificatePEM: certificate, privateKeyPEM: pki.keyPEM("encrypted"))
        }
        #expect(throws: SignedFileError(.privateKey, "")) {
            try SignedFile.sign(Self.content, certificatePEM: certificate, privateKeyPEM: Array("junk".utf8))
        }
        #expect(throws: SignedFileError(.signingCertificate, "")) {
            try SignedFile.sign(Self.content, certificatePEM: Array("junk".utf8), privateKeyPEM: pki.keyPEM("leaf"))
        }
        // The first half of the certificate, closed: base64 that decodes to truncated DER.
        let text = String(decoding: certificate, as: UTF8.self)
        let lines = text.split(separator: "\n")
        let damaged = Array(
            (lines.prefix(lines.count / 2).joined(separator: "\n") + "\n-----END CERTIFICATE-----\n").utf8)
        #expect(throws: SignedFileError(.signingCertificate, "")) {
            try SignedFile.sign(Self.content, certificatePEM: damaged, privateKeyPEM: pki.keyPEM("leaf"))
        }
        #expect(throws: SignedFileError(.signingCertificate, "")) {
            try SignedFile.sign(
                Self.content, certificatePEM: certificate, privateKeyPEM: pki.keyPEM("leaf"), chainPEM: [])
        }
        #expect(throws: SignedFileError(.trustAnchors, "")) {
            try SignedFile.verify(
                try pki.sign(Self.content, leaf: "leaf", chain: true), domain: "example.com",
                trust: TrustAnchors(systemStore: false, certificatesPEM: Array("not PEM".utf8)))
        }
    }

    @Test func emptyContentSignsAndVerifies() async throws {
        let pki = try await Self.pki.value
        let der = try pki.sign([], leaf: "leaf", chain: true)
        #expect(try SignedFile.verify(der, domain: "example.com", trust: pki.trust).content == [])
    }
}

/// Test material only: throwaway keys and certificates made with `openssl` in a temporary directory, valid for two
/// days. A root and an intermediate CA; leaves signed by the intermediate for example.com (+www), *.example.com,
/// other.example, www.example.com and an e-mail-only example.com; a stranger root with its own example.com leaf; and
/// an encrypted key.
final class TestPKI: Sendable {
    let directory: TemporaryDirectory
    let trust: TrustAnchors

    private init(directory: TemporaryDirectory) throws {
        self.directory = directory
        self.trust = TrustAnchors(
            systemStore: false, certificatesPEM: Array(try Data(contentsOf: directory.url("root.pem"))))
    }

    func file(_ name: String) -> String { directory.file("\(name).pem") }
    func key(_ name: String) -> String { directory.file("\(name)-key.pem") }
    func pem(_ name: String) throws -> [UInt8] { Array(try Data(contentsOf: URL(fileURLWithPath: file(name)))) }
    func keyPEM(_ name: String) throws -> [UInt8] { Array(try Data(contentsOf: URL(fileURLWithPath: key(name)))) }

    func openssl(_ arguments: [String]) async throws -> ChildProcess.Output {
        try await ChildProcess.run(try TestCA.opensslPath(), arguments, timeout: .seconds(60))
    }

    /// Signs with SignedFile, the intermediate carried when `chain`.
    func sign(_ content: [UInt8], leaf: String, chain: Bool) throws -> [UInt8] {
        try SignedFile.sign(
            content, certificatePEM: pem(leaf), privateKeyPEM: keyPEM(leaf),
            chainPEM: chain ? pem(leaf == "stranger" ? "stranger-root" : "intermediate") : nil)
    }

    /// Signs as Apple's documentation does: `openssl smime -sign -nodetach -outform DER`, with the chain.
    func opensslSign(_ content: [UInt8], leaf: String, binary: Bool = true) async throws -> [UInt8] {
        // Each call has its own files: the suite's tests run in parallel over one PKI.
        let unique = UUID().uuidString
        let input = try directory.write(content, to: "\(leaf)-\(unique).json")
        let out = directory.file("\(leaf)-\(unique).der")
        let issuer = leaf == "stranger" ? "stranger-root" : "intermediate"
        let result = try await openssl(
            [
                "smime", "-sign", "-nodetach", "-in", input, "-signer", file(leaf), "-inkey", key(leaf),
                "-certfile", file(issuer), "-outform", "DER", "-out", out,
            ] + (binary ? ["-binary"] : []))
        guard result.termination.exitStatus == 0 else { throw PKIFailure(description: result.stderr) }
        return Array(try Data(contentsOf: URL(fileURLWithPath: out)))
    }

    static func make() async throws -> TestPKI {
        let directory = try TemporaryDirectory(prefix: "signed-files")
        let p256 = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
        func root(_ name: String) -> [String] {
            ["req", "-x509"] + p256 + [
                "-keyout", directory.file("\(name)-key.pem"), "-out", directory.file("\(name).pem"), "-days", "2",
                "-subj", "/CN=passkey test \(name)", "-addext", "basicConstraints=critical,CA:TRUE",
                "-addext", "keyUsage=critical,keyCertSign,cRLSign",
            ]
        }
        var steps = [root("root"), root("stranger-root")]
        func issue(_ name: String, by issuer: String, subject: String, extensions: String, serial: Int) throws {
            let ext = try directory.write(Array(extensions.utf8), to: "\(name).ext")
            steps.append(
                ["req", "-new"] + p256 + [
                    "-keyout", directory.file("\(name)-key.pem"), "-out", directory.file("\(name).csr"), "-subj",
                    "/CN=\(subject)",
                ])
            steps.append([
                "x509", "-req", "-in", directory.file("\(name).csr"), "-CA", directory.file("\(issuer).pem"), "-CAkey",
                directory.file("\(issuer)-key.pem"), "-set_serial", String(serial), "-days", "2", "-extfile", ext,
                "-out", directory.file("\(name).pem"),
            ])
        }
        let server =
            "basicConstraints = critical, CA:FALSE\nkeyUsage = critical, digitalSignature\n"
            + "extendedKeyUsage = serverAuth\n"
        try issue(
            "intermediate", by: "root", subject: "passkey test intermediate",
            extensions: "basicConstraints = critical, CA:TRUE\nkeyUsage = critical, keyCertSign, cRLSign\n", serial: 2)
        try issue(
            "leaf", by: "intermediate", subject: "example.com",
            extensions: server + "subjectAltName = DNS:example.com, DNS:www.example.com\n", serial: 3)
        try issue(
            "wildcard", by: "intermediate", subject: "*.example.com",
            extensions: server + "subjectAltName = DNS:*.example.com\n", serial: 4)
        try issue(
            "other", by: "intermediate", subject: "other.example",
            extensions: server + "subjectAltName = DNS:other.example\n", serial: 5)
        try issue(
            "www", by: "intermediate", subject: "www.example.com",
            extensions: server + "subjectAltName = DNS:www.example.com\n", serial: 6)
        try issue(
            "email", by: "intermediate", subject: "example.com",
            extensions: "basicConstraints = critical, CA:FALSE\nkeyUsage = critical, digitalSignature\n"
                + "extendedKeyUsage = emailProtection\nsubjectAltName = DNS:example.com\n", serial: 7)
        try issue(
            "stranger", by: "stranger-root", subject: "example.com",
            extensions: server + "subjectAltName = DNS:example.com\n", serial: 8)
        steps.append([
            "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-aes-128-cbc", "-pass",
            "pass:test-only", "-out", directory.file("encrypted-key.pem"),
        ])
        for arguments in steps {
            let result = try await ChildProcess.run(try TestCA.opensslPath(), arguments, timeout: .seconds(60))
            guard result.termination.exitStatus == 0 else {
                throw PKIFailure(description: "openssl \(arguments[0]) failed: \(result.stderr)")
            }
        }
        return try TestPKI(directory: directory)
    }
}

struct PKIFailure: Error, CustomStringConvertible {
    var description: String
}
