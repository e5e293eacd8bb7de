import ArgumentParser
import Basics
import CTAP2
import Foundation
import PasskeyStoreIO
import PublicSuffix
import WebAuthnClient
import WebAuthnClientIO

/// `Tools/bench client`: `passkey client get` against this computer's store as a whole process, beside the bare
/// process start-up and the store's key derivation measured in the same run; then the WebAuthn engine in process,
/// per request, beside the authenticator's own getAssertion.
///
/// Target: the whole process under 50 ms plus the KDF (the store is unlocked with $PASSKEY_PASSPHRASE, so scrypt runs
/// in every process).
struct ClientBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "client",
        abstract: "passkey client get as a whole process (start to JSON out), and the in-process engine per request.")

    @Option(help: "Whole-process runs of passkey client get.") var runs = 30
    @Option(help: "Seconds per in-process measurement slice.") var seconds: Double = 0.5
    @Option(help: "Interleaved in-process slices; medians are reported.") var rounds = 7
    @Option(help: "The passkey binary (default: the one next to this executable).") var passkey: String?

    static let targetMilliseconds = 50.0
    static let origin = "https://example.com"

    func run() async throws {
        let binary =
            passkey
            ?? URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
            .appendingPathComponent("passkey").path
        guard FileManager.default.isExecutableFile(atPath: binary) else {
            throw BenchError("passkey not found at \(binary): swift build -c release --product passkey")
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("passkey-bench-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = directory.appendingPathComponent("store.sqlite").path
        let passphrase = "bench passphrase"
        let environment = ProcessInfo.processInfo.environment.merging(
            ["PASSKEY_PASSPHRASE": passphrase, "NO_COLOR": "1"], uniquingKeysWith: { $1 })

        print("passkey-bench client: \(runs) runs of each process, medians and p90")
        _ = try Self.spawn(binary, ["init", "--store", store], environment: environment)
        let creation = directory.appendingPathComponent("create.json").path
        try Data(Self.creationOptions().utf8).write(to: URL(fileURLWithPath: creation))
        let created = try Self.spawn(
            binary,
            [
                "client", "create", "--options", creation, "--origin", Self.origin, "--store", store, "--no-phone",
                "--yes", "--json",
            ], environment: environment)
        guard created.status == 0 else { throw BenchError("passkey client create failed: \(created.errors)") }
        let request = directory.appendingPathComponent("get.json").path
        try Data(#"{"challenge":"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8","rpId":"example.com"}"#.utf8).write(
            to: URL(fileURLWithPath: request))
        let get = [
            "client", "get", "--options", request, "--origin", Self.origin, "--store", store, "--no-phone", "--yes",
            "--json",
        ]

        // The store's key derivation, in this process: what every unlocked process pays.
        var kdf: [Double] = []
        var whole: [Double] = []
        var startUp: [Double] = []
        for _ in 0..<runs {
            let start = ContinuousClock.now
            let opened = try SQLiteCredentialStore.open(at: URL(fileURLWithPath: store), passphrase: passphrase)
            kdf.append(Self.milliseconds(since: start))
            opened.close()
            let version = try Self.spawn(binary, ["--version"], environment: environment)
            guard version.status == 0 else { throw BenchError("passkey --version failed") }
            startUp.append(version.milliseconds)
            let signedIn = try Self.spawn(binary, get, environment: environment)
            guard signedIn.status == 0, signedIn.output.hasPrefix("{\"id\":") else {
                throw BenchError("passkey client get failed (\(signedIn.status)): \(signedIn.errors)")
            }
            whole.append(signedIn.milliseconds)
        }
        let kdfMedian = Self.median(kdf)
        let wholeMedian = Self.median(whole)
        print(Self.row("process start (passkey --version)", startUp))
        print(Self.row("store key derivation (scrypt)", kdf))
        print(Self.row("passkey client get, start to JSON", whole))
        let withoutKDF = wholeMedian - kdfMedian
        let verdict = withoutKDF < Self.targetMilliseconds ? "met" : "MISSED"
        print(
            String(
                format: "  the process without the KDF: %.1f ms (target < %.0f ms): %@", withoutKDF,
                Self.targetMilliseconds, verdict))

        try await engineFigures()
        if withoutKDF >= Self.targetMilliseconds { throw ExitCode.failure }
    }

    /// The engine's get() over an in-process authenticator with one passkey, against getAssertion straight to the
    /// same authenticator: what the client's decisions, the RP ID check and the JSON cost per request.
    private func engineFigures() async throws {
        let list = try PublicSuffixListFile.load()
        let store = InMemoryCredentialStore()
        let authenticator = Authenticator(
            configuration: .platform,
            environment: AuthenticatorEnvironment(store: store, userInteraction: UnattendedApproval()))
        let engine = ClientEngine(
            environment: ClientEnvironment(
                authenticators: [InProcessAuthenticator(authenticator, store: store)],
                userInterface: FirstChoiceInterface(),
                relyingPartyIDChecker: SuffixListRelyingPartyIDChecker(list: list, relatedOrigins: nil)))
        _ = try await engine.create(
            PublicKeyCredentialCreationOptions(json: Array(Self.creationOptions().utf8)), origin: Self.origin)
        let request = try PublicKeyCredentialRequestOptions(
            json: Array(#"{"challenge":"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8","rpId":"example.com"}"#.utf8))
        let direct = CTAPClient.getAssertionMessage(
            relyingPartyID: "example.com", clientDataHash: [UInt8](repeating: 7, count: 32), allowList: [],
            extensions: [:])

        var engineTimes: [Double] = []
        var directTimes: [Double] = []
        for _ in 0..<rounds {
            engineTimes.append(
                try await Self.perOperation(seconds: seconds) {
                    _ = try await engine.get(request, origin: Self.origin)
                })
            directTimes.append(
                try await Self.perOperation(seconds: seconds) {
                    let response = await authenticator.handle(direct)
                    guard response.first == 0 else { throw BenchError("getAssertion answered \(response[0])") }
                })
        }
        print(
            "  " + Self.padded("engine get(), in process")
                + String(format: "%9.1f µs per request (median of %d slices)", Self.median(engineTimes), rounds))
        print(
            "  " + Self.padded("authenticator getAssertion alone")
                + String(format: "%9.1f µs per request", Self.median(directTimes)))
    }

    private static func creationOptions() -> String {
        #"{"rp":{"id":"example.com","name":"Example"},"user":{"id":"AQIDBA","name":"alice","displayName":"Alice"},"#
            + #""challenge":"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8","pubKeyCredParams":[{"type":"public-key","#
            + #""alg":-7}],"authenticatorSelection":{"residentKey":"required"}}"#
    }

    /// Microseconds per call of `body`, over `seconds`.
    private static func perOperation(seconds: Double, _ body: () async throws -> Void) async throws -> Double {
        let start = ContinuousClock.now
        let end = start + .milliseconds(Int64(seconds * 1000))
        var count = 0
        while ContinuousClock.now < end {
            try await body()
            count += 1
        }
        return microseconds(ContinuousClock.now - start) / Double(max(count, 1))
    }

    private struct Spawned {
        var status: Int32
        var output: String
        var errors: String
        var milliseconds: Double
    }

    /// Runs `binary arguments` to its end: the wall time from before the fork to after the exit.
    private static func spawn(_ binary: String, _ arguments: [String], environment: [String: String]) throws
        -> Spawned
    {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = arguments
        process.environment = environment
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = FileHandle.nullDevice
        let start = ContinuousClock.now
        try process.run()
        let out = output.fileHandleForReading.readDataToEndOfFile()
        let err = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Spawned(
            status: process.terminationStatus, output: String(decoding: out, as: UTF8.self),
            errors: String(decoding: err, as: UTF8.self), milliseconds: milliseconds(since: start))
    }

    private static func milliseconds(since start: ContinuousClock.Instant) -> Double {
        microseconds(ContinuousClock.now - start) / 1000
    }

    private static func microseconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) * 1_000_000 + Double(duration.components.attoseconds) / 1e12
    }

    static func median(_ values: [Double]) -> Double { percentile(values, 0.5) }

    static func percentile(_ values: [Double], _ p: Double) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return 0 }
        return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))]
    }

    private static func row(_ name: String, _ values: [Double]) -> String {
        "  " + padded(name) + String(format: "p50 %7.1f ms   p90 %7.1f ms", median(values), percentile(values, 0.9))
    }

    private static func padded(_ name: String) -> String {
        name.padding(toLength: 40, withPad: " ", startingAt: 0)
    }
}
