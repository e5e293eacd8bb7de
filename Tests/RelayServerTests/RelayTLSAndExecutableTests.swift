import Foundation
import NIOSSL
import RelayServer
import Testing

/// `wss` with a throwaway certificate, and the `passkey-relay` executable itself.
@Suite(.timeLimit(.minutes(1)))
struct RelayTLSAndExecutableTests {
    /// Runs a program and returns its exit status (output discarded).
    static func run(_ path: String, _ arguments: [String]) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus
    }

    static let openssl = ["/usr/bin/openssl", "/usr/local/bin/openssl"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }

    /// A self-signed P-256 certificate for `localhost` made with the openssl CLI: (certificate, key) paths.
    static func makeCertificate() throws -> (String, String) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("relay-tls-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let certificate = directory + "/cert.pem"
        let key = directory + "/key.pem"
        let status = try run(
            openssl!,
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-keyout", key, "-out",
                certificate, "-days", "1", "-nodes", "-subj", "/CN=localhost", "-addext",
                "subjectAltName=DNS:localhost",
            ])
        guard status == 0 else { throw ClientError("openssl req failed with status \(status)") }
        return (certificate, key)
    }

    @Test(.enabled(if: openssl != nil, "the openssl command-line tool is not installed"))
    func relaysOverTLS() async throws {
        let (certificate, key) = try Self.makeCertificate()
        let relay = try await Relay.start {
            $0.tls = try? RelayServerConfiguration.makeTLSContext(
                certificateChainFile: certificate, privateKeyFile: key)
        }
        defer { Task { await relay.server.shutdown() } }
        #expect(relay.server.baseURL == "wss://127.0.0.1:\(relay.port)")

        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .file(certificate)
        tls.certificateVerification = .noHostnameVerification
        let context = try NIOSSLContext(configuration: tls)
        let tunnelID = Relay.randomTunnelID()
        let authenticator = try await RawClient.connect(port: relay.port, tls: context)
        try await authenticator.send(RawClient.upgradeRequest(path: "/cable/new/\(tunnelID)"))
        let response = try await authenticator.readResponse()
        #expect(response.status == 101)
        let routingID = try #require(response.header("X-caBLE-Routing-ID"))
        let client = try await RawClient.connect(port: relay.port, tls: context)
        try await client.send(RawClient.upgradeRequest(path: "/cable/connect/\(routingID)/\(tunnelID)"))
        #expect(try await client.readResponse().status == 101)
        try await client.send(RawClient.binary([1, 2, 3]))
        #expect(try await authenticator.readFrame()?.payload == [1, 2, 3])

        // Plain HTTP on the TLS port gets nowhere.
        let plain = try await RawClient.connect(port: relay.port)
        try await plain.send(RawClient.upgradeRequest(path: "/cable/new/\(Relay.randomTunnelID())"))
        try await plain.expectEOF()
    }

    /// A client that offers only TLS 1.0 or 1.1 gets no handshake, hence no upgrade; TLS 1.2 and 1.3 both work.
    @Test(.enabled(if: openssl != nil, "the openssl command-line tool is not installed"))
    func onlyTLS12AndLaterAreAccepted() async throws {
        let (certificate, key) = try Self.makeCertificate()
        let relay = try await Relay.start {
            $0.tls = try? RelayServerConfiguration.makeTLSContext(
                certificateChainFile: certificate, privateKeyFile: key)
        }
        defer { Task { await relay.server.shutdown() } }
        let versions: [(TLSVersion, accepted: Bool)] = [
            (.tlsv1, false), (.tlsv11, false), (.tlsv12, true), (.tlsv13, true),
        ]
        for (version, accepted) in versions {
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.minimumTLSVersion = version
            tls.maximumTLSVersion = version
            tls.trustRoots = .file(certificate)
            tls.certificateVerification = .noHostnameVerification
            let client = try await RawClient.connect(port: relay.port, tls: try NIOSSLContext(configuration: tls))
            try? await client.send(RawClient.upgradeRequest(path: "/cable/new/\(Relay.randomTunnelID())"))
            let status = try? await client.readResponse().status
            #expect((status == 101) == accepted, "TLS version \(version): upgrade status \(String(describing: status))")
            await client.close()
        }
    }

    @Test func missingCertificateFilesAreATypedError() {
        #expect {
            _ = try RelayServerConfiguration.makeTLSContext(
                certificateChainFile: "/nonexistent/cert.pem", privateKeyFile: "/nonexistent/key.pem")
        } throws: { error in
            if case .tls = error as? RelayServerError { return true }
            return false
        }
    }

    /// `passkey-relay`, built next to this test bundle.
    static let executable: String? = {
        let bundle = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        let candidates = [bundle, bundle.deletingLastPathComponent()].map {
            $0.appendingPathComponent("passkey-relay").path
        }
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
    }()

    @Test func theExecutablePrintsItsAddressRelaysAndExitsCleanlyOnSIGTERM() async throws {
        let path = try #require(
            Self.executable, "passkey-relay is not built next to the tests: run swift build --build-tests")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = [
            "--listen", "127.0.0.1:0", "--routing-id", "ab", "--tunnel-lifetime", "30", "--threads", "1",
        ]
        let stdout = Pipe()
        let stderr = Pipe()
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        defer { if process.isRunning { process.terminate() } }

        let line = String(decoding: stdout.fileHandleForReading.readLine(), as: UTF8.self)
        let prefix = "listening on ws://127.0.0.1:"
        #expect(line.hasPrefix(prefix))
        let port = try #require(Int(line.dropFirst(prefix.count)))

        let tunnelID = Relay.randomTunnelID()
        let authenticator = try await RawClient.connect(port: port)
        try await authenticator.send(RawClient.upgradeRequest(path: "/cable/new/\(tunnelID)"))
        let response = try await authenticator.readResponse()
        let routingID = try #require(response.header("X-caBLE-Routing-ID"))
        #expect(routingID.hasPrefix("AB"))
        let client = try await RawClient.connect(port: port)
        try await client.send(RawClient.upgradeRequest(path: "/cable/connect/\(routingID)/\(tunnelID)"))
        #expect(try await client.readResponse().status == 101)
        try await authenticator.send(RawClient.binary([9, 9]))
        #expect(try await client.readFrame()?.payload == [9, 9])
        await client.close()
        #expect(try await authenticator.expectClose() == 1000)

        let metrics = try await RawClient.connect(port: port)
        try await metrics.send("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try await metrics.readResponse().body.contains("relay_tunnels_paired_total 1\n"))

        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        #expect(process.terminationReason == .exit && process.terminationStatus == 0)
        let log = String(decoding: stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let tunnelLines = log.split(separator: "\n").filter { $0.contains("tunnel closed") }
        #expect(tunnelLines.count == 1)
        #expect(tunnelLines.first?.contains("outcome=completed") == true)
        #expect(tunnelLines.first?.contains("routing_id=\(routingID)") == true)
    }

    @Test(arguments: [
        ["--routing-id", "XYZ"], ["--listen", "nowhere"], ["--tls-cert", "/tmp/x.pem"], ["--max-message-bytes", "0"],
        ["--tunnel-lifetime", "-1"], ["--trusted-proxy", "example.com"], ["--trusted-proxy", "10.0.0.0/33"],
        ["--ipv4-prefix-length", "33"], ["--ipv6-prefix-length", "-1"], ["--reserved-tunnel-percent", "101"],
        ["--max-overhead-frames", "0"], ["--max-pending-connections", "0"],
    ])
    func theExecutableRefusesBadFlags(arguments: [String]) throws {
        let path = try #require(Self.executable)
        #expect(try Self.run(path, arguments) == 64)
    }
}

extension FileHandle {
    /// Reads up to (not including) the next newline.
    func readLine() -> [UInt8] {
        var line: [UInt8] = []
        while true {
            let byte = readData(ofLength: 1)
            guard let first = byte.first, first != UInt8(ascii: "\n") else { return line }
            line.append(first)
        }
    }
}
