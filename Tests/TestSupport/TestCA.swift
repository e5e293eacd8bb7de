import Foundation

/// A throwaway certificate authority and a server certificate it signed for `localhost` and `127.0.0.1`, made with
/// the `openssl` command into a ``TemporaryDirectory`` (every file mode 0600): EC P-256 keys, valid for a day.
/// Servers load ``certificate`` and ``privateKey``; clients trust ``caCertificate``.
public final class TestCA: Sendable {
    /// The `openssl` executable, if one is installed (`Tools/test` installs it: a test that needs it fails
    /// without it, and never skips).
    public static let openssl: String? = ["/usr/bin/openssl", "/usr/local/bin/openssl"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }

    /// The `openssl` executable, or a failure that says it is missing.
    public static func opensslPath() throws -> String {
        guard let openssl else { throw Failure(description: "the openssl command-line tool is not installed") }
        return openssl
    }

    /// Why making a certificate failed.
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// The directory holding every file; removed by ``remove()`` or when the last reference goes.
    public let directory: TemporaryDirectory
    /// The authority's certificate (PEM), for a client's trust roots.
    public var caCertificate: String { directory.file("ca.pem") }
    /// The server's certificate (PEM), signed by the authority.
    public var certificate: String { directory.file("cert.pem") }
    /// The server certificate's private key (PEM, unencrypted).
    public var privateKey: String { directory.file("key.pem") }

    private init(directory: TemporaryDirectory) {
        self.directory = directory
    }

    /// Makes the authority and the server certificate. Fails when `openssl` is missing or refuses.
    public static func make() async throws -> TestCA {
        let openssl = try opensslPath()
        let ca = TestCA(directory: try TemporaryDirectory(prefix: "test-ca"))
        let caKey = ca.directory.file("ca-key.pem")
        let request = ca.directory.file("cert.csr")
        let extensions = try ca.directory.write(
            Array(
                """
                basicConstraints = critical, CA:FALSE
                keyUsage = critical, digitalSignature
                extendedKeyUsage = serverAuth
                subjectAltName = DNS:localhost, IP:127.0.0.1

                """.utf8),
            to: "cert.ext")
        let p256 = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
        let steps: [[String]] = [
            ["req", "-x509"] + p256 + [
                "-keyout", caKey, "-out", ca.caCertificate, "-days", "1", "-subj", "/CN=passkey test CA",
                "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
            ],
            ["req", "-new"] + p256 + ["-keyout", ca.privateKey, "-out", request, "-subj", "/CN=localhost"],
            [
                "x509", "-req", "-in", request, "-CA", ca.caCertificate, "-CAkey", caKey, "-set_serial", "2",
                "-days", "1", "-extfile", extensions, "-out", ca.certificate,
            ],
        ]
        for arguments in steps {
            let result = try await ChildProcess.run(openssl, arguments, timeout: .seconds(60))
            guard result.termination.exitStatus == 0 else {
                throw Failure(description: "openssl \(arguments[0]) failed (\(result.termination)): \(result.stderr)")
            }
        }
        for name in ca.directory.listing() {
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: ca.directory.file(name))
        }
        return ca
    }

    /// Removes every file (again: nothing).
    public func remove() { directory.remove() }
}
