import Crypto
import Dispatch
import Synchronization

/// One fuzz target: a parser or state machine, the input it takes and the invariants it must keep.
///
/// `run` returns normally for accepted and refused input alike. A broken invariant traps (`expect`), and so
/// does anything else that crashes: that is what libFuzzer records as a finding. Every target is
/// deterministic: its randomness is seeded and its clocks are passed in, so a reproducer replays exactly.
public struct FuzzTarget: Sendable {
    /// The name `Tools/fuzz` and `passkey-fuzz` use, and the corpus directory under `Tests/Fuzz/Corpus`.
    public let name: String
    /// What is fed and what is checked, in one line.
    public let summary: String
    /// Inputs that reach deep into the parser; `passkey-fuzz seeds DIR` writes them as the committed corpus.
    public let seeds: @Sendable () -> [[UInt8]]
    /// Runs one input.
    public let run: @Sendable ([UInt8]) -> Void

    public init(
        name: String, summary: String, seeds: @escaping @Sendable () -> [[UInt8]],
        run: @escaping @Sendable ([UInt8]) -> Void
    ) {
        self.name = name
        self.summary = summary
        self.seeds = seeds
        self.run = run
    }
}

/// Every target, in the order `--list` prints them.
///
/// Each target is declared `static let name: FuzzTarget = …`: without the annotation, naming the targets in `all`
/// made the compiler infer every initializer (closures of dozens of lines) again, about 4 s of type checking.
public enum FuzzTargets {
    public static let all: [FuzzTarget] = [
        CBORTargets.cbor,
        CTAPTargets.ctap2,
        FaultTargets.ctap2Faults,
        StoreFaultTargets.storeFaults,
        CTAPTargets.ctaphid,
        CTAPHIDHostTarget.ctaphidHost,
        CTAPTargets.uhid,
        HybridTargets.qrURL,
        HybridTargets.advert,
        HybridTargets.noiseInitiator,
        HybridTargets.noiseResponder,
        HybridTargets.tunnelFrames,
        HybridTargets.linking,
        HybridTargets.clientSession,
        PhoneSessionTarget.phoneSession,
        WakeChannelTargets.clientPayload,
        WakeChannelTargets.listenerMessages,
        RelayTargets.http,
        RelayTargets.webSocket,
        ImageTargets.png,
        ImageTargets.pgm,
        StoreTargets.storeFile,
        PasswordTargets.passwordService,
        ClientTargets.publicSuffix,
        ClientTargets.rpID,
        ClientOptionsTargets.clientOptions,
        ClientResponsesTarget.clientResponses,
        RelyingPartySiteTarget.site,
        ExchangeTargets.cxf,
        ExchangeTargets.archive,
        ExchangeTargets.importFile,
        ExchangeTargets.otpauthURI,
        ShareTargets.qr,
        ShareTargets.messages,
        DomainsTargets.aasa,
        DomainsTargets.assetLinks,
        DomainsTargets.banner,
        PasswordRulesTargets.passwordRules,
        SignedFileTargets.signedFile,
        SignedFileTargets.approvalTable,
    ]

    /// The target called `name`, if there is one.
    public static func named(_ name: String) -> FuzzTarget? {
        all.first { $0.name == name }
    }
}

/// Traps when an invariant fails: the crash libFuzzer keeps as a reproducer.
func expect(
    _ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String, file: StaticString = #file,
    line: UInt = #line
) {
    if !condition() { fatalError("fuzz invariant broken: \(message())", file: file, line: line) }
}

/// Reads structured values from a fuzz input; every read succeeds, returning less (or nothing) at the end.
struct FuzzInput {
    private var bytes: ArraySlice<UInt8>

    init(_ bytes: [UInt8]) { self.bytes = bytes[...] }

    var isEmpty: Bool { bytes.isEmpty }

    /// The next byte, or nil at the end.
    mutating func byte() -> UInt8? { bytes.popFirst() }

    /// Up to `count` bytes.
    mutating func take(_ count: Int) -> [UInt8] {
        let taken = bytes.prefix(max(0, count))
        bytes = bytes.dropFirst(taken.count)
        return Array(taken)
    }

    /// A chunk: a two-byte big-endian length, then that many bytes (fewer at the end). Nil at the end.
    mutating func chunk() -> [UInt8]? {
        guard let high = byte() else { return nil }
        let low = byte() ?? 0
        return take(Int(high) << 8 | Int(low))
    }

    /// Everything not read yet.
    mutating func rest() -> [UInt8] { take(bytes.count) }

    /// Writes `parts` the way `chunk()` reads them: for seeds.
    static func chunks(_ parts: [[UInt8]]) -> [UInt8] {
        parts.flatMap { part -> [UInt8] in
            let count = min(part.count, 0xFFFF)
            return [UInt8(count >> 8), UInt8(count & 0xFF)] + part.prefix(count)
        }
    }
}

/// Reproducible "random" bytes: SHA-256 of a seed and a counter. Targets must replay exactly.
final class SeededBytes: Sendable {
    private let counter = Mutex(UInt64(0))
    private let seed: UInt8

    init(seed: UInt8) { self.seed = seed }

    func bytes(_ count: Int) -> [UInt8] {
        var output: [UInt8] = []
        while output.count < count {
            let block = counter.withLock { counter in
                counter += 1
                return counter
            }
            output += SHA256.hash(data: [seed] + withUnsafeBytes(of: block.bigEndian) { Array($0) })
        }
        return Array(output.prefix(count))
    }

    /// A P-256 key agreement key from the seeded bytes.
    func keyAgreementKey() -> P256.KeyAgreement.PrivateKey {
        while true {
            if let key = try? P256.KeyAgreement.PrivateKey(rawRepresentation: bytes(32)) { return key }
        }
    }
}

/// Waits for async work that never really suspends (an in-memory authenticator that approves at once).
/// libFuzzer calls targets synchronously; the work runs on the cooperative pool and this thread waits.
func runBlocking<Value: Sendable>(_ body: @escaping @Sendable () async -> Value) -> Value {
    let result = Mutex<Value?>(nil)
    let done = DispatchSemaphore(value: 0)
    Task {
        let value = await body()
        result.withLock { $0 = value }
        done.signal()
    }
    done.wait()
    return result.withLock { $0! }
}
