import ArgumentParser
import CBOR
import CTAP2
import Crypto
import Foundation
import PasskeyStore

/// `Tools/bench authenticator`: throughput of the authenticator against raw swift-crypto.
@main
struct PasskeyBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "passkey-bench",
        abstract: "Benchmarks that print figures; targets are checked here, never in unit tests.",
        subcommands: [AuthenticatorBench.self]
    )
}

struct AuthenticatorBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "authenticator",
        abstract: "Raw P-256 sign/s, then getAssertion/s and makeCredential/s through the whole authenticator."
    )

    @Option(help: "Seconds to measure each figure.") var seconds: Double = 2
    @Option(help: "Repeat the whole run this many times and report the best of each figure.") var rounds = 3

    func run() async throws {
        print("passkey-bench authenticator: \(rounds) round(s) of \(seconds) s per figure, best kept")
        var best: [String: Double] = [:]
        for round in 1...rounds {
            let figures = try await measureOnce()
            for (name, value) in figures { best[name] = max(best[name] ?? 0, value) }
            print(
                "round \(round): "
                    + figures.filter { !$0.0.hasPrefix("step") }.map { "\($0.0) \(Int($0.1))/s" }.joined(
                        separator: ", "))
        }
        let sign = best["raw sign"]!
        print("")
        print("getAssertion steps besides signing (µs each)")
        for name in best.keys.filter({ $0.hasPrefix("step: ") }).sorted() {
            print(
                String(
                    format: "  %@ %.2f", name.dropFirst(6).padding(toLength: 28, withPad: " ", startingAt: 0),
                    1e6 / best[name]!))
        }
        print("")
        print("key generation (per-credential hot path)")
        for name in ["keygen default", "keygen non-compact", "keygen raw import"] {
            print("  \(name.padding(toLength: 22, withPad: " ", startingAt: 0)) \(Self.format(best[name]!))/s")
        }
        print("")
        print("raw swift-crypto P-256 sign      \(Self.format(sign))/s")
        let rows: [(String, String, Double?)] = [
            ("getAssertion, in-memory store", "getAssertion memory", 0.8),
            ("getAssertion, SQLite store", "getAssertion sqlite", 0.6),
            ("makeCredential, in-memory store", "makeCredential memory", nil),
            ("makeCredential, SQLite store", "makeCredential sqlite", nil),
        ]
        var failures: [String] = []
        for (label, key, target) in rows {
            let rate = best[key]!
            var line = "\(label.padding(toLength: 32, withPad: " ", startingAt: 0)) \(Self.format(rate))/s"
            line += String(format: "   ratio to raw sign %.2f", rate / sign)
            if let target {
                let met = rate / sign >= target
                line += String(format: " (target ≥ %.1f: %@)", target, met ? "met" : "NOT MET")
                if !met { failures.append(label) }
            }
            print(line)
        }
        let makeMemory = best["makeCredential memory"]!
        print("makeCredential target ≥ 2,000/s with the in-memory store: \(makeMemory >= 2000 ? "met" : "NOT MET")")
        if makeMemory < 2000 { failures.append("makeCredential, in-memory store") }
        if !failures.isEmpty { throw ExitCode(2) }
    }

    static func format(_ value: Double) -> String {
        let formatter = NumberFormatter()
        formatter.numberStyle = .decimal
        formatter.maximumFractionDigits = 0
        return formatter.string(from: NSNumber(value: value))!
    }

    func measureOnce() async throws -> [(String, Double)] {
        var figures: [(String, Double)] = []
        let key = P256.Signing.PrivateKey()
        let message = [UInt8](repeating: 0x5A, count: 69)
        figures.append(("raw sign", try measure { _ = try key.signature(for: message) }))
        figures.append(("keygen default", try measure { _ = P256.Signing.PrivateKey() }))
        figures.append(("keygen non-compact", try measure { _ = P256.Signing.PrivateKey(compactRepresentable: false) }))
        figures.append(
            (
                "keygen raw import",
                try measure {
                    _ = try P256.Signing.PrivateKey(rawRepresentation: AuthenticatorEnvironment.systemRandomBytes(32))
                }
            ))

        let signature = try key.signature(for: message)
        figures.append(("step: DER-encode signature", try measure { _ = signature.derRepresentation }))
        figures.append(("step: SHA-256 of RP ID", try measure { _ = SHA256.hash(data: Array("rp7.example".utf8)) }))
        let request = CBORValue.map([
            1: "rp7.example", 2: .bytes([UInt8](repeating: 0xCD, count: 32)),
            3: [["type": "public-key", "id": .bytes([UInt8](repeating: 7, count: 32))]],
        ])
        let requestBytes = request.encoded()
        figures.append(("step: decode request CBOR", try measure { _ = try CBORValue(decoding: requestBytes) }))
        figures.append(("step: encode request CBOR", try measure { _ = request.encoded() }))

        let memory = InMemoryCredentialStore()
        figures.append(("getAssertion memory", try await measureGetAssertion(store: memory)))
        figures.append(("makeCredential memory", try await measureMakeCredential(store: memory)))

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("passkey-bench-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let sqlite = try SQLiteCredentialStore.create(
            at: directory.appendingPathComponent("bench.sqlite"), passphrase: "bench", kdf: .testing)
        defer { sqlite.close() }
        figures.append(("getAssertion sqlite", try await measureGetAssertion(store: sqlite)))
        figures.append(("makeCredential sqlite", try await measureMakeCredential(store: sqlite)))
        return figures
    }

    /// getAssertion with an allowList, user presence auto-approved: CBOR in, CBOR out.
    func measureGetAssertion(store: any CredentialStore) async throws -> Double {
        let authenticator = Authenticator(
            environment: AuthenticatorEnvironment(store: store, userInteraction: UnattendedApproval()))
        // A realistic store: 100 passkeys over 10 relying parties.
        var ids: [[UInt8]] = []
        for index in 0..<100 {
            let response = await authenticator.handle(
                [CTAPCommand.makeCredential.rawValue] + Self.makeCredential(rp: "rp\(index % 10).example", user: index))
            guard response.first == 0 else { throw BenchError("makeCredential failed with \(response.first!)") }
            let body = try CBORValue(decoding: response.dropFirst())
            ids.append(Array(body.mapValue![2]!.bytesValue![55..<87]))
        }
        let request =
            [CTAPCommand.getAssertion.rawValue]
            + CBORValue.map([
                1: "rp7.example", 2: .bytes([UInt8](repeating: 0xCD, count: 32)),
                3: [["type": "public-key", "id": .bytes(ids[97])]],
            ]).encoded()
        return try await measureAsync {
            let response = await authenticator.handle(request)
            guard response.first == 0 else { throw BenchError("getAssertion failed with \(response.first!)") }
        }
    }

    func measureMakeCredential(store: any CredentialStore) async throws -> Double {
        let authenticator = Authenticator(
            environment: AuthenticatorEnvironment(store: store, userInteraction: UnattendedApproval()))
        var counter = 1000
        return try await measureAsync {
            counter += 1
            let response = await authenticator.handle(
                [CTAPCommand.makeCredential.rawValue] + Self.makeCredential(rp: "bench.example", user: counter))
            guard response.first == 0 else { throw BenchError("makeCredential failed with \(response.first!)") }
        }
    }

    static func makeCredential(rp: String, user: Int) -> [UInt8] {
        CBORValue.map([
            1: .bytes([UInt8](repeating: 0xCD, count: 32)),
            2: ["id": .text(rp)],
            3: ["id": .bytes(withUnsafeBytes(of: user.bigEndian) { Array($0) }), "name": .text("user\(user)")],
            4: [["alg": -7, "type": "public-key"]],
            7: ["rk": true, "uv": true],
        ]).encoded()
    }

    func measure(_ body: () throws -> Void) throws -> Double {
        for _ in 0..<200 { try body() }
        let clock = ContinuousClock()
        let start = clock.now
        var count = 0
        while clock.now - start < .seconds(seconds) {
            for _ in 0..<100 { try body() }
            count += 100
        }
        return Double(count) / Self.seconds(clock.now - start)
    }

    func measureAsync(_ body: () async throws -> Void) async throws -> Double {
        for _ in 0..<200 { try await body() }
        let clock = ContinuousClock()
        let start = clock.now
        var count = 0
        while clock.now - start < .seconds(seconds) {
            for _ in 0..<100 { try await body() }
            count += 100
        }
        return Double(count) / Self.seconds(clock.now - start)
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
