import Basics
import ArgumentParser
import CBOR
import CTAP2
import Crypto
import Foundation
import PasskeyStoreIO
import Synchronization
import WebAuthn

/// `Tools/bench authenticator`: throughput of the authenticator against raw swift-crypto.
@main
struct PasskeyBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "passkey-bench",
        abstract: "Benchmarks that print figures; targets are checked here, never in unit tests.",
        subcommands: [
            AuthenticatorBench.self, HybridCoreBench.self, HybridSignInBench.self, RelayBench.self,
            RelayFloodBench.self, ClientBench.self, RelayClusterWorker.self, EchoPairServer.self,
        ]
    )
}

/// Each figure is measured in short slices, and the slices of raw signing and of getAssertion are
/// interleaved, so a ratio compares runs made under the same machine conditions. Medians are reported.
struct AuthenticatorBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "authenticator",
        abstract:
            "Raw P-256 and Ed25519 sign/s, then getAssertion/s (ES256 and EdDSA) and makeCredential/s through the "
            + "whole authenticator."
    )

    @Option(help: "Seconds per measurement slice.") var seconds: Double = 0.5
    @Option(help: "Number of interleaved slices per figure; medians are reported.") var rounds = 7
    @Option(
        help: ArgumentHelp(
            "Only loop getAssertion for this many seconds, for a profiler.", visibility: .hidden))
    var profileGetAssertion: Double?
    @Option(help: ArgumentHelp("The store --profile-get-assertion uses: memory or sqlite.", visibility: .hidden))
    var profileStore = "memory"

    func run() async throws {
        print("passkey-bench authenticator: \(rounds) interleaved slices of \(seconds) s per figure, medians")
        let key = P256.Signing.PrivateKey()
        let edKey = Curve25519.Signing.PrivateKey()
        let message = [UInt8](repeating: 0x5A, count: 69)  // authenticator data (37) ‖ clientDataHash (32)

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("passkey-bench-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let sqlite = try SQLiteCredentialStore.create(
            at: directory.appendingPathComponent("bench.sqlite"), passphrase: "bench", kdf: .testing)
        defer { sqlite.close() }
        let memoryAssertion = try await AssertionLoop(store: InMemoryCredentialStore())
        let sqliteAssertion = try await AssertionLoop(store: sqlite)
        let edAssertion = try await AssertionLoop(store: InMemoryCredentialStore(), algorithm: .eddsa)
        if let profileGetAssertion {
            let loop = profileStore == "sqlite" ? sqliteAssertion : memoryAssertion
            let end = ContinuousClock.now + .seconds(profileGetAssertion)
            var count = 0
            while ContinuousClock.now < end {
                try await loop.once()
                count += 1
            }
            print("\(count) getAssertion calls")
            return
        }
        // Registration runs against stores of its own, emptied before every slice: the loops then measure the same
        // work each round, the in-memory store never reaches its capacity (CTAP2_ERR_KEY_STORE_FULL), and the
        // assertion store keeps its 100 passkeys.
        let registrationSQLite = try SQLiteCredentialStore.create(
            at: directory.appendingPathComponent("registration.sqlite"), passphrase: "bench", kdf: .testing)
        defer { registrationSQLite.close() }
        let memoryRegistration = RegistrationLoop(store: InMemoryCredentialStore())
        let sqliteRegistration = RegistrationLoop(store: registrationSQLite)
        let sqliteID = sqliteAssertion.credentialID

        var samples: [String: [Double]] = [:]
        func record(_ name: String, _ value: Double) { samples[name, default: []].append(value) }
        for _ in 0..<rounds {
            let sign = try measure { _ = try key.signature(for: message) }
            record("raw sign", sign)
            let memory = try await measureAsync { try await memoryAssertion.once() }
            let stored = try await measureAsync { try await sqliteAssertion.once() }
            let signAgain = try measure { _ = try key.signature(for: message) }
            record("getAssertion memory", memory)
            record("getAssertion sqlite", stored)
            record("ratio memory", memory / ((sign + signAgain) / 2))
            record("ratio sqlite", stored / ((sign + signAgain) / 2))
            // EdDSA the same way: raw Ed25519 signing around getAssertion of an Ed25519 passkey (in-memory store).
            let edSign = try measure { _ = try edKey.signature(for: message) }
            let edMemory = try await measureAsync { try await edAssertion.once() }
            let edSignAgain = try measure { _ = try edKey.signature(for: message) }
            record("raw Ed25519 sign", edSign)
            record("getAssertion EdDSA memory", edMemory)
            record("ratio EdDSA memory", edMemory / ((edSign + edSignAgain) / 2))
            try await memoryRegistration.reset()
            record("makeCredential memory", try await measureAsync { try await memoryRegistration.once() })
            try await sqliteRegistration.reset()
            record("makeCredential sqlite", try await measureAsync { try await sqliteRegistration.once() })
            record("keygen default", try measure { _ = P256.Signing.PrivateKey() })
            record("keygen non-compact", try measure { _ = P256.Signing.PrivateKey(compactRepresentable: false) })
            record(
                "keygen raw import",
                try measure {
                    _ = try P256.Signing.PrivateKey(rawRepresentation: AuthenticatorEnvironment.systemRandomBytes(32))
                })
            let signature = try key.signature(for: message)
            let request = memoryAssertion.request
            let decoded = try CBORValue(decoding: request.dropFirst())
            record("step: DER, swift-crypto", try measure { _ = signature.derRepresentation })
            record(
                "step: DER, hand-written (used)",
                try measure { _ = ECDSASignatureDER.encode(raw: Array(signature.rawRepresentation)) })
            record("step: decode request CBOR", try measure { _ = try CBORValue(decoding: request.dropFirst()) })
            record("step: encode request CBOR", try measure { _ = decoded.encoded() })
            record(
                "step: parse getAssertion request",
                try measure { _ = try GetAssertionRequest(cbor: try CBORValue(decoding: request.dropFirst())) })
            let store = memoryAssertion.store
            let id = memoryAssertion.credentialID
            record("step: in-memory store lookup", try await measureAsync { _ = try await store.credential(id: id) })
            // The SQLite store's share: the lookup as getAssertion makes it (warm key cache, database unchanged, so
            // no SQL), then a one-row read of the same connection (lock, cached statement, read transaction): what
            // a lookup adds once anything has been committed since its row was last read.
            record("phase: sqlite lookup", try measure { _ = try sqlite.credential(id: sqliteID) })
            record("phase: sqlite one-row read", try measure { _ = try sqlite.largeBlobArray() })
            let noOp: [UInt8] = [0x42]
            let authenticator = memoryAssertion.authenticator
            record("step: authenticator call", try await measureAsync { _ = await authenticator.handle(noOp) })
        }
        let median = samples.mapValues { values in values.sorted()[values.count / 2] }

        print("")
        print("key generation (per-credential hot path)")
        for name in ["keygen default", "keygen non-compact", "keygen raw import"] {
            print("  \(name.padding(toLength: 22, withPad: " ", startingAt: 0)) \(Self.format(median[name]!))/s")
        }
        print("")
        print("getAssertion steps besides signing (µs each)")
        for name in median.keys.filter({ $0.hasPrefix("step: ") }).sorted() {
            let label = String(name.dropFirst(6)).padding(toLength: 28, withPad: " ", startingAt: 0)
            print("  \(label) \(String(format: "%.2f", 1e6 / median[name]!))")
        }
        print("")
        Self.printBreakdown(median)
        print("")
        print("raw swift-crypto P-256 sign      \(Self.format(median["raw sign"]!))/s")
        print("raw swift-crypto Ed25519 sign    \(Self.format(median["raw Ed25519 sign"]!))/s")
        var failures: [String] = []
        for (label, name, ratio, target) in [
            ("getAssertion, in-memory store", "getAssertion memory", "ratio memory", 0.8),
            ("getAssertion, SQLite store", "getAssertion sqlite", "ratio sqlite", 0.75),
        ] {
            let met = median[ratio]! >= target
            if !met { failures.append(label) }
            print(
                "\(label.padding(toLength: 32, withPad: " ", startingAt: 0)) \(Self.format(median[name]!))/s   "
                    + String(
                        format: "ratio to raw sign %.2f (target ≥ %.2f: %@)", median[ratio]!, target,
                        met ? "met" : "NOT MET"))
        }
        // No target: Ed25519 signs several times faster than P-256, so the same authenticator work is a larger share.
        print(
            "getAssertion EdDSA, in-memory    \(Self.format(median["getAssertion EdDSA memory"]!))/s   "
                + String(format: "ratio to raw Ed25519 sign %.2f", median["ratio EdDSA memory"]!))
        let makeMemory = median["makeCredential memory"]!
        print(
            "makeCredential, in-memory store  \(Self.format(makeMemory))/s   (target ≥ 2,000/s: \(makeMemory >= 2000 ? "met" : "NOT MET"))"
        )
        print(
            "makeCredential, SQLite store     \(Self.format(median["makeCredential sqlite"]!))/s   (one fsync per passkey)"
        )
        if makeMemory < 2000 { failures.append("makeCredential, in-memory store") }
        if !failures.isEmpty {
            print("targets not met: \(failures.joined(separator: ", "))")
            throw ExitCode(2)
        }
    }

    /// Where the time of one getAssertion goes, in µs, from the medians of this run.
    static func printBreakdown(_ median: [String: Double]) {
        func micro(_ name: String) -> Double { 1e6 / median[name]! }
        let sign = micro("raw sign")
        let memory = micro("getAssertion memory")
        let sqlite = micro("getAssertion sqlite")
        let memoryLookup = micro("step: in-memory store lookup")
        let sqliteLookup = micro("phase: sqlite lookup")
        let oneRow = micro("phase: sqlite one-row read")
        let rows: [(String, Double)] = [
            ("getAssertion, SQLite store (total)", sqlite),
            ("  P-256 signing (raw sign)", sign),
            ("  store lookup, credential(id:) (no SQL)", sqliteLookup),
            ("  the rest of the authenticator", sqlite - sign - sqliteLookup),
            ("getAssertion, in-memory store (total)", memory),
            ("  store lookup, credential(id:)", memoryLookup),
            ("  the rest of the authenticator", memory - sign - memoryLookup),
            // Not part of the sums: after any commit, the next lookup of each passkey reads its row once more.
            ("SQLite one-row read, once after any commit", oneRow),
        ]
        print("getAssertion per assertion (µs, medians; the rest = total − signing − lookup)")
        for (label, value) in rows {
            print("  \(label.padding(toLength: 48, withPad: " ", startingAt: 0)) \(String(format: "%6.2f", value))")
        }
    }

    static func format(_ value: Double) -> String {
        let formatter = NumberFormatter()
        formatter.numberStyle = .decimal
        formatter.maximumFractionDigits = 0
        return formatter.string(from: NSNumber(value: value))!
    }

    func measure(_ body: () throws -> Void) throws -> Double {
        try SliceTimer(seconds: seconds).rate(body)
    }

    func measureAsync(_ body: () async throws -> Void) async throws -> Double {
        try await SliceTimer(seconds: seconds).rate(body)
    }
}

/// getAssertion with an allowList against a store of 100 passkeys over 10 relying parties,
/// user presence approved without asking: CTAP2 CBOR in, CBOR out.
struct AssertionLoop {
    let authenticator: Authenticator
    let request: [UInt8]
    let store: any CredentialStore
    let credentialID: [UInt8]

    init(store: any CredentialStore, algorithm: COSEAlgorithm = .es256) async throws {
        authenticator = Authenticator(
            environment: AuthenticatorEnvironment(store: store, userInteraction: UnattendedApproval()))
        var ids: [[UInt8]] = []
        for index in 0..<100 {
            let response = try MakeCredentialResponse(
                ctapResponse: await authenticator.handle(
                    RegistrationLoop.makeCredential(rp: "rp\(index % 10).example", user: index, algorithm: algorithm)))
            ids.append(response.credentialID)
        }
        self.store = store
        credentialID = ids[97]
        request = CTAPClient.getAssertionMessage(
            relyingPartyID: "rp7.example", clientDataHash: [UInt8](repeating: 0xCD, count: 32), allowList: [ids[97]],
            userVerification: false)
    }

    func once() async throws {
        let response = await authenticator.handle(request)
        guard response.first == 0 else { throw BenchError("getAssertion failed with status \(response.first!)") }
    }
}

/// makeCredential of a discoverable passkey with a fresh user handle each time.
final class RegistrationLoop: Sendable {
    let authenticator: Authenticator
    let store: any CredentialStore
    let counter = Counter()

    init(store: any CredentialStore) {
        self.store = store
        authenticator = Authenticator(
            environment: AuthenticatorEnvironment(store: store, userInteraction: UnattendedApproval()))
    }

    /// Empties the store (authenticatorReset's store call), so every slice starts alike.
    func reset() async throws {
        try await store.deleteAll()
    }

    func once() async throws {
        let response = await authenticator.handle(Self.makeCredential(rp: "bench.example", user: 1000 + counter.next()))
        guard response.first == 0 else { throw BenchError("makeCredential failed with status \(response.first!)") }
    }

    static func makeCredential(rp: String, user: Int, algorithm: COSEAlgorithm = .es256) -> [UInt8] {
        CTAPClient.makeCredentialMessage(
            clientDataHash: [UInt8](repeating: 0xCD, count: 32), relyingPartyID: rp, relyingPartyName: nil,
            userHandle: withUnsafeBytes(of: user.bigEndian) { Array($0) }, userName: "user\(user)",
            userDisplayName: nil, algorithms: [algorithm])
    }
}

final class Counter: Sendable {
    private let value = Mutex(0)
    func next() -> Int {
        value.withLock {
            $0 += 1; return $0
        }
    }
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
