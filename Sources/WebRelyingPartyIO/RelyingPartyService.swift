import Crypto
import Foundation
import RelyingParty
import Synchronization
import WebRelyingParty

/// Every effect the web relying party has, injected once (cf. `AuthenticatorEnvironment`).
public struct RelyingPartyEnvironment: Sendable {
    /// Cryptographically secure random bytes, for challenges and user handles; seeded in tests.
    public var randomBytes: @Sendable (Int) -> [UInt8]
    /// A monotonic clock for challenge lifetimes.
    public var now: @Sendable () -> ContinuousClock.Instant
    /// The wall clock, for registration dates.
    public var currentDate: @Sendable () -> Date
    /// Saves the state (the first argument; the second is the state as last saved) before a verification is
    /// answered: `RelyingPartyStateFile.save` for a file.
    public var saveState: @Sendable (RelyingPartyState, RelyingPartyState) throws(RelyingPartyStateError) -> Void
    /// Receives each verdict line as soon as it is decided (standard output, unbuffered, in `passkey rp serve`).
    public var printLine: @Sendable (String) -> Void

    public init(
        randomBytes: @escaping @Sendable (Int) -> [UInt8] = RelyingPartyEnvironment.systemRandomBytes,
        now: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now },
        currentDate: @escaping @Sendable () -> Date = { Date() },
        saveState: @escaping @Sendable (RelyingPartyState, RelyingPartyState) throws(RelyingPartyStateError) -> Void,
        printLine: @escaping @Sendable (String) -> Void
    ) {
        self.randomBytes = randomBytes
        self.now = now
        self.currentDate = currentDate
        self.saveState = saveState
        self.printLine = printLine
    }

    /// An environment that keeps the state in `file` (one journal line a change, mode 0600).
    public static func stateFile(
        _ file: RelyingPartyStateFile, printLine: @escaping @Sendable (String) -> Void
    ) -> RelyingPartyEnvironment {
        RelyingPartyEnvironment(
            saveState: { (state, previous) throws(RelyingPartyStateError) in try file.save(state, previous: previous) },
            printLine: printLine)
    }

    /// Random bytes from BoringSSL's CSPRNG through swift-crypto.
    public static let systemRandomBytes: @Sendable (Int) -> [UInt8] = { count in
        guard count > 0 else { return [] }
        return SymmetricKey(size: SymmetricKeySize(bitCount: count * 8)).withUnsafeBytes { Array($0) }
    }
}

/// The web relying party behind one lock, with its effects: answers complete HTTP requests.
///
/// One request at a time: the state is read, changed, saved and committed under the lock, so two
/// verifications never interleave their writes. Saving is a small synchronous file write.
public final class RelyingPartyService: Sendable {
    private let site: Mutex<RelyingPartySite>
    private let environment: RelyingPartyEnvironment

    public init(site: RelyingPartySite, environment: RelyingPartyEnvironment) {
        self.site = Mutex(site)
        self.environment = environment
    }

    /// The state as last saved.
    public var state: RelyingPartyState { site.withLock { $0.state } }

    /// Answers one request: asks the site, saves the state it changed (a failed save becomes a 500 refusal and
    /// nothing is kept), prints the verdict line, and returns the response.
    public func handle(_ request: RelyingPartySite.Request) -> RelyingPartySite.Response {
        site.withLock { site in
            var exchange = site.handle(
                request, now: environment.now(), date: environment.currentDate(), randomBytes: environment.randomBytes)
            if let state = exchange.stateToSave {
                do throws(RelyingPartyStateError) {
                    try environment.saveState(state, site.state)
                    site.commit(state)
                } catch {
                    exchange = exchange.savingFailed(error.description)
                }
            }
            if let line = exchange.line { environment.printLine(line) }
            return exchange.response
        }
    }

    /// A refusal the HTTP layer makes itself (body too large, unreadable request).
    public func refusal(_ error: WebRelyingPartyError) -> RelyingPartySite.Response {
        RelyingPartySite.refusal(error).response
    }
}
